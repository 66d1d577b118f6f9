-- retry: notifications for waiting claims are sent by the store after its
-- writes commit, not by a trigger inside them: a transaction that notifies
-- holds PostgreSQL's notification lock until its commit is flushed, so
-- every writer that notified committed one after the other, and concurrent
-- sightings and claims lost group commit (10x slower under load).
DROP TRIGGER retry_items_notify_insert ON retry_items;
DROP TRIGGER retry_items_notify_update ON retry_items;
DROP FUNCTION retry_items_notify();
