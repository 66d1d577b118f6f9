-- retry: retention of done items. Done items are found oldest first by
-- their last change; the counter says how many retention ever deleted,
-- for Stats and metrics, cluster-wide.
CREATE INDEX retry_items_done ON retry_items (updated_at) WHERE state = 3;

CREATE TABLE retry_pruned (
	one     smallint PRIMARY KEY CHECK (one = 0),
	n       bigint NOT NULL,
	last_at timestamptz
);
INSERT INTO retry_pruned (one, n) VALUES (0, 0);
