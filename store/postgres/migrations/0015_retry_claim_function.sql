-- retry: the claim as a function, so that PostgreSQL plans it once per
-- connection. The statement is large (promotion and claim in one, see
-- store/postgres/retry.go) and planning it anew for every claim, as a
-- prepared statement with custom plans does, cost more than running it;
-- the function keeps one generic plan for it (the SET below applies to the
-- function's own statements only). Arguments: $1 now, $2 n, $3 retry
-- quota, $4 lease end, $5 worker, $6 promote limit, $7 max expiries, $8
-- the lease tokens. A row with was = -1 names an item whose lease ran out
-- once too often; the others are the grants.
CREATE FUNCTION retry_claim(timestamptz, bigint, bigint, timestamptz, text, bigint, bigint, text[])
RETURNS TABLE (id text, lease_gen bigint, lease_key text, attempts integer, fails integer, priority integer,
	last_class text, payload bytea, due_at timestamptz, was integer)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	WITH due AS MATERIALIZED (
			SELECT id, state, expiries, priority, next_at FROM retry_items
			WHERE NOT ready AND next_at IS NOT NULL AND next_at <= $1
			ORDER BY next_at LIMIT $6
			FOR UPDATE SKIP LOCKED),
		woken AS (
			SELECT id, CASE WHEN state = 2 THEN 1 ELSE state END AS lane, state = 2 AS lapsed, priority, next_at
			FROM due WHERE NOT (state = 2 AND expiries + 1 >= $7)),
		r AS MATERIALIZED (
			SELECT id, priority, next_at FROM retry_items
			WHERE ready AND state = 1 AND next_at <= $1
			ORDER BY priority DESC, next_at LIMIT $2
			FOR UPDATE SKIP LOCKED),
		p AS MATERIALIZED (
			SELECT id, priority, next_at FROM retry_items
			WHERE ready AND state = 0 AND next_at <= $1
			ORDER BY priority DESC, next_at LIMIT $2
			FOR UPDATE SKIP LOCKED),
		rc AS (SELECT id, priority, next_at FROM r UNION ALL SELECT id, priority, next_at FROM woken WHERE lane = 1),
		pc AS (SELECT id, priority, next_at FROM p UNION ALL SELECT id, priority, next_at FROM woken WHERE lane = 0),
		pick AS (
			SELECT id, next_at, 0 AS was FROM (
				SELECT id, next_at, row_number() OVER (ORDER BY priority DESC, next_at) AS k FROM pc) x
			WHERE k <= $2 - LEAST((SELECT count(*) FROM rc), $3)
			UNION ALL
			SELECT id, next_at, 1 FROM (
				SELECT id, next_at, row_number() OVER (ORDER BY priority DESC, next_at) AS k FROM rc) y
			WHERE k <= GREATEST($3, $2 - (SELECT count(*) FROM pc))),
		numbered AS (SELECT id, next_at, was, row_number() OVER () AS n FROM pick),
		changes AS (
			SELECT coalesce(k.id, w.id) AS id, k.id IS NOT NULL AS leased, coalesce(w.lapsed, false) AS lapsed,
				k.next_at AS due_at, k.was, k.n
			FROM numbered k FULL JOIN woken w ON w.id = k.id),
		up AS (
			UPDATE retry_items t SET
				state = CASE WHEN c.leased THEN 2 WHEN c.lapsed THEN 1 ELSE t.state END,
				ready = NOT c.leased,
				next_at = CASE WHEN c.leased THEN $4 ELSE t.next_at END,
				attempts = CASE WHEN c.leased THEN t.attempts + 1 ELSE t.attempts END,
				expiries = CASE WHEN c.lapsed THEN t.expiries + 1 ELSE t.expiries END,
				lease_gen = CASE WHEN c.leased THEN nextval('retry_lease_gen') ELSE t.lease_gen END,
				lease_key = CASE WHEN c.leased THEN ($8::text[])[c.n] ELSE t.lease_key END,
				worker = CASE WHEN c.leased THEN $5 WHEN c.lapsed THEN NULL ELSE t.worker END,
				updated_at = $1
			FROM changes c WHERE t.id = c.id AND t.id = ANY (ARRAY(SELECT id FROM changes))
			RETURNING t.id, c.leased, t.lease_gen, t.lease_key, t.attempts, t.fails, t.priority, coalesce(t.last_class, '') AS last_class,
				t.payload, c.due_at, c.was)
		SELECT id, lease_gen, lease_key, attempts, fails, priority, last_class, payload, due_at, was FROM up WHERE leased
		UNION ALL
		SELECT id, 0, '', 0, 0, 0, '', NULL, NULL, -1 FROM due WHERE state = 2 AND expiries + 1 >= $7;
END
$fn$;
