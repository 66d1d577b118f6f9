-- One row per feed: the Syncer's position (opaque JSON), a version for
-- optimistic concurrency, and counters of the ids below.
CREATE TABLE IF NOT EXISTS feed_cursors (
	name       text        PRIMARY KEY,
	version    bigint      NOT NULL,
	state      bytea       NOT NULL,
	seen_count bigint      NOT NULL DEFAULT 0,
	items      bigint      NOT NULL DEFAULT 0,
	updated_at timestamptz NOT NULL
);

-- Item ids already handed out, per feed, so that re-read items are
-- recognised. Capped per feed; the oldest go first through feed_seen_age.
CREATE TABLE IF NOT EXISTS feed_seen (
	feed    text        NOT NULL,
	item_id text        NOT NULL,
	seen_at timestamptz NOT NULL,
	PRIMARY KEY (feed, item_id)
);

CREATE INDEX IF NOT EXISTS feed_seen_age ON feed_seen (feed, seen_at, item_id);
