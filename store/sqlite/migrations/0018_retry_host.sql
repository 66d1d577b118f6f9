-- retry: an item may name the host it depends on (NULL: none), so that the
-- host answering again makes its parked items due (Scheduler.WakeHost).
-- The wake reads only items of one host that wait out a failure, through
-- retry_items_host, never the table. The index holds the class rather than
-- next_at, the column the wake writes: SQLite took four times as long to
-- wake 100 000 items through an index it changed while it read it. The
-- counter says how many wakes moved items and how many, for Stats and
-- metrics.
ALTER TABLE retry_items ADD COLUMN host TEXT;
CREATE INDEX retry_items_host ON retry_items (host, last_class) WHERE host IS NOT NULL AND state = 1 AND ready = 0;

CREATE TABLE retry_host_wakes (
	one     INTEGER PRIMARY KEY CHECK (one = 0),
	events  INTEGER NOT NULL,
	n       INTEGER NOT NULL,
	last_at INTEGER
);
INSERT INTO retry_host_wakes (one, events, n) VALUES (0, 0, 0);
