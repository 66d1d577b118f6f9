-- retry: the wake index carries the state, so that counting waiting items
-- by due time (Scheduler.Due) reads the index alone instead of looking up
-- every row to tell waiting items from leases. Claims keep reading it by
-- next_at, as before; every write that changes a row's state changes its
-- next_at too, so keeping the index costs no extra writes.
DROP INDEX retry_items_wake;
CREATE INDEX retry_items_wake ON retry_items (next_at, state) WHERE ready = 0 AND next_at IS NOT NULL;
