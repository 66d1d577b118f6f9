-- retry: retention of done items. Done items are found oldest first by
-- their last change; the counter says how many retention ever deleted,
-- for Stats and metrics.
CREATE INDEX retry_items_done ON retry_items (updated_at) WHERE state = 3;

CREATE TABLE retry_pruned (
	one     INTEGER PRIMARY KEY CHECK (one = 0),
	n       INTEGER NOT NULL,
	last_at INTEGER
);
INSERT INTO retry_pruned (one, n) VALUES (0, 0);
