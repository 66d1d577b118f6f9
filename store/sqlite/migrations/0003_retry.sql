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

-- Stats: counts by state and class read this index, not the table.
CREATE INDEX retry_items_stats ON retry_items (state, last_class);

-- The lease generation counter: tokens are unique across items.
CREATE TABLE retry_lease_seq (
	one INTEGER PRIMARY KEY CHECK (one = 0),
	gen INTEGER NOT NULL
);
INSERT INTO retry_lease_seq (one, gen) VALUES (0, 0);
