-- One row per feed: the Syncer's position (opaque JSON), a version for
-- optimistic concurrency, and counters of the ids below.
CREATE TABLE IF NOT EXISTS feed_cursors (
	name       TEXT    PRIMARY KEY,
	version    INTEGER NOT NULL,
	state      BLOB    NOT NULL,
	seen_count INTEGER NOT NULL DEFAULT 0,
	items      INTEGER NOT NULL DEFAULT 0,
	updated_at INTEGER NOT NULL
);

-- Item ids already handed out, per feed, so that re-read items are
-- recognised. Capped per feed; the oldest go first through feed_seen_age.
CREATE TABLE IF NOT EXISTS feed_seen (
	feed    TEXT    NOT NULL,
	item_id TEXT    NOT NULL,
	seen_at INTEGER NOT NULL,
	PRIMARY KEY (feed, item_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS feed_seen_age ON feed_seen (feed, seen_at, item_id);
