-- retry: the long-horizon retry scheduler's items.
--
-- state: 0 pending, 1 scheduled, 2 leased, 3 done.
-- next_at: when a pending or scheduled item is next due, when a leased
-- item's lease ends, NULL for done items.
-- ready: true for pending/scheduled items whose next_at has come (set by the
-- claim's promotion step), so that claims read a small index of due items
-- instead of walking the far larger set waiting for the future.
CREATE SEQUENCE retry_lease_gen;

CREATE TABLE retry_items (
	id           text PRIMARY KEY,
	priority     integer NOT NULL DEFAULT 0,
	state        smallint NOT NULL,
	ready        boolean NOT NULL DEFAULT false,
	expiries     smallint NOT NULL DEFAULT 0,
	settled_op   smallint NOT NULL DEFAULT 0,
	attempts     integer NOT NULL DEFAULT 0,
	fails        integer NOT NULL DEFAULT 0,
	observations integer NOT NULL DEFAULT 0,
	lease_gen    bigint NOT NULL DEFAULT 0,
	settled_gen  bigint NOT NULL DEFAULT 0,
	next_at      timestamptz,
	last_seen    timestamptz,
	created_at   timestamptz NOT NULL,
	updated_at   timestamptz NOT NULL,
	last_class   text,
	history      text,
	worker       text,
	payload      bytea
);

-- Claims: due items by kind (pending, scheduled), highest priority first,
-- oldest due next.
CREATE INDEX retry_items_claim ON retry_items (state, priority DESC, next_at) WHERE ready;

-- Promotion: items waiting for a time (future work, leases), oldest first.
CREATE INDEX retry_items_wake ON retry_items (next_at) WHERE NOT ready AND next_at IS NOT NULL;

-- Stats: counts by state and class read this index, not the table.
CREATE INDEX retry_items_stats ON retry_items (state, last_class);
