-- retry: the long-horizon retry scheduler's items.
--
-- state: 0 pending, 1 scheduled, 2 leased, 3 done.
-- next_at (unix microseconds): when a pending or scheduled item is next due,
-- when a leased item's lease ends, NULL for done items.
-- ready: 1 for pending/scheduled items whose next_at has come (set by the
-- claim's promotion step), so that claims read a small index of due items
-- instead of walking the far larger set waiting for the future.
CREATE TABLE retry_items (
	rid          INTEGER PRIMARY KEY,
	id           TEXT NOT NULL UNIQUE,
	priority     INTEGER NOT NULL DEFAULT 0,
	state        INTEGER NOT NULL,
	ready        INTEGER NOT NULL DEFAULT 0,
	next_at      INTEGER,
	attempts     INTEGER NOT NULL DEFAULT 0,
	fails        INTEGER NOT NULL DEFAULT 0,
	expiries     INTEGER NOT NULL DEFAULT 0,
	last_class   TEXT,
	history      TEXT,
	worker       TEXT,
	lease_gen    INTEGER NOT NULL DEFAULT 0,
	settled_gen  INTEGER NOT NULL DEFAULT 0,
	settled_op   INTEGER NOT NULL DEFAULT 0,
	observations INTEGER NOT NULL DEFAULT 0,
	last_seen    INTEGER,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	-- Last, so that reading the other columns never follows overflow pages.
	payload      BLOB
);

-- Claims: due items by kind (pending, scheduled), highest priority first,
-- oldest due next.
CREATE INDEX retry_items_claim ON retry_items (state, priority DESC, next_at) WHERE ready = 1;

-- Promotion: items waiting for a time (future work, leases), oldest first.
CREATE INDEX retry_items_wake ON retry_items (next_at) WHERE ready = 0 AND next_at IS NOT NULL;

-- Stats: item counts by state and failure class, kept exact by triggers
-- so that Stats never counts the table.
CREATE TABLE retry_counts (
	state INTEGER NOT NULL,
	class TEXT NOT NULL,
	n     INTEGER NOT NULL,
	PRIMARY KEY (state, class)
) WITHOUT ROWID;

CREATE TRIGGER retry_items_count_insert AFTER INSERT ON retry_items BEGIN
	INSERT INTO retry_counts (state, class, n) VALUES (NEW.state, coalesce(NEW.last_class, ''), 1)
		ON CONFLICT (state, class) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER retry_items_count_delete AFTER DELETE ON retry_items BEGIN
	UPDATE retry_counts SET n = n - 1 WHERE state = OLD.state AND class = coalesce(OLD.last_class, '');
END;

CREATE TRIGGER retry_items_count_update AFTER UPDATE OF state, last_class ON retry_items
	WHEN OLD.state IS NOT NEW.state OR OLD.last_class IS NOT NEW.last_class
BEGIN
	UPDATE retry_counts SET n = n - 1 WHERE state = OLD.state AND class = coalesce(OLD.last_class, '');
	INSERT INTO retry_counts (state, class, n) VALUES (NEW.state, coalesce(NEW.last_class, ''), 1)
		ON CONFLICT (state, class) DO UPDATE SET n = n + 1;
END;

-- The lease generation counter: tokens are unique across items.
CREATE TABLE retry_lease_seq (
	one INTEGER PRIMARY KEY CHECK (one = 0),
	gen INTEGER NOT NULL
);
INSERT INTO retry_lease_seq (one, gen) VALUES (0, 0);
