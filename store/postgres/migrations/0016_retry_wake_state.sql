-- retry: the wake index carries the state, so that counting waiting items
-- by due time (Scheduler.Due) can be an index-only scan instead of a heap
-- fetch per row to tell waiting items from leases. Claims keep reading it
-- by next_at, as before; state is already indexed (retry_items_claim), so
-- no update that was HOT stops being so.
CREATE INDEX retry_items_wake_state ON retry_items (next_at) INCLUDE (state) WHERE NOT ready AND next_at IS NOT NULL;
DROP INDEX retry_items_wake;
ALTER INDEX retry_items_wake_state RENAME TO retry_items_wake;
