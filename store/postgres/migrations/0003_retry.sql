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

-- A work queue churns: every claim and settlement leaves a dead row version
-- and dead index entries behind, and a scan for due leases walks those of
-- settled leases until vacuum removes them. Vacuum after 2 % of the table
-- has changed instead of the default 20 %.
ALTER TABLE retry_items SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.05);

-- Claims: due items by kind (pending, scheduled), highest priority first,
-- oldest due next.
CREATE INDEX retry_items_claim ON retry_items (state, priority DESC, next_at) WHERE ready;

-- Promotion: items waiting for a time (future work, leases), oldest first.
CREATE INDEX retry_items_wake ON retry_items (next_at) WHERE NOT ready AND next_at IS NOT NULL;

-- Stats: item counts by state and failure class, kept exact by statement
-- triggers so that Stats never counts the table. Each backend adds its
-- changes to one of 16 shards (by process id), so that nodes writing at
-- once rarely wait for each other's counter rows; rows are locked in key
-- order, so they cannot deadlock either.
CREATE TABLE retry_counts (
	shard smallint NOT NULL,
	state smallint NOT NULL,
	class text NOT NULL,
	n     bigint NOT NULL,
	PRIMARY KEY (shard, state, class)
);

CREATE FUNCTION retry_items_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO retry_counts AS c (shard, state, class, n)
		SELECT pg_backend_pid() % 16, state, coalesce(last_class, ''), count(*) FROM new_rows
		GROUP BY 2, 3 ORDER BY 2, 3
		ON CONFLICT (shard, state, class) DO UPDATE SET n = c.n + excluded.n;
	ELSIF TG_OP = 'DELETE' THEN
		INSERT INTO retry_counts AS c (shard, state, class, n)
		SELECT pg_backend_pid() % 16, state, coalesce(last_class, ''), -count(*) FROM old_rows
		GROUP BY 2, 3 ORDER BY 2, 3
		ON CONFLICT (shard, state, class) DO UPDATE SET n = c.n + excluded.n;
	ELSE
		INSERT INTO retry_counts AS c (shard, state, class, n)
		SELECT pg_backend_pid() % 16, state, class, sum(d) FROM (
			SELECT state, coalesce(last_class, '') AS class, -1 AS d FROM old_rows
			UNION ALL
			SELECT state, coalesce(last_class, ''), 1 FROM new_rows) x
		GROUP BY 2, 3 HAVING sum(d) <> 0 ORDER BY 2, 3
		ON CONFLICT (shard, state, class) DO UPDATE SET n = c.n + excluded.n;
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER retry_items_count_insert AFTER INSERT ON retry_items
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION retry_items_count();
CREATE TRIGGER retry_items_count_update AFTER UPDATE ON retry_items
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION retry_items_count();
CREATE TRIGGER retry_items_count_delete AFTER DELETE ON retry_items
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION retry_items_count();
