-- retry: an item may name the host it depends on (NULL: none), so that the
-- host answering again makes its parked items due (Scheduler.WakeHost).
-- The wake reads only items of one host that wait out a failure, through
-- retry_items_host, never the table; next_at is indexed already, so no
-- update that was HOT stops being so. The counter says how many wakes
-- moved items and how many, for Stats and metrics, cluster-wide.
ALTER TABLE retry_items ADD COLUMN host text;
CREATE INDEX retry_items_host ON retry_items (host, next_at) WHERE host IS NOT NULL AND state = 1 AND NOT ready;

CREATE TABLE retry_host_wakes (
	one     smallint PRIMARY KEY CHECK (one = 0),
	events  bigint NOT NULL,
	n       bigint NOT NULL,
	last_at timestamptz
);
INSERT INTO retry_host_wakes (one, events, n) VALUES (0, 0, 0);
