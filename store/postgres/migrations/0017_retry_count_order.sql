-- retry: the counter rows of a shard are taken in byte order of their
-- class (COLLATE "C"), like every other lock order of the store, whatever
-- the database's collation; RetrySucceedClaim locks them in the same
-- order. The rest of retry_items_count is as migration 0003 wrote it.
CREATE OR REPLACE FUNCTION retry_items_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO retry_counts AS c (shard, state, class, n)
		SELECT pg_backend_pid() % 16, state, coalesce(last_class, ''), count(*) FROM new_rows
		GROUP BY 2, 3 ORDER BY 2, coalesce(last_class, '') COLLATE "C"
		ON CONFLICT (shard, state, class) DO UPDATE SET n = c.n + excluded.n;
	ELSIF TG_OP = 'DELETE' THEN
		INSERT INTO retry_counts AS c (shard, state, class, n)
		SELECT pg_backend_pid() % 16, state, coalesce(last_class, ''), -count(*) FROM old_rows
		GROUP BY 2, 3 ORDER BY 2, coalesce(last_class, '') COLLATE "C"
		ON CONFLICT (shard, state, class) DO UPDATE SET n = c.n + excluded.n;
	ELSE
		INSERT INTO retry_counts AS c (shard, state, class, n)
		SELECT pg_backend_pid() % 16, x.state, x.class, sum(d) FROM (
			SELECT state, coalesce(last_class, '') AS class, -1 AS d FROM old_rows
			UNION ALL
			SELECT state, coalesce(last_class, ''), 1 FROM new_rows) x
		GROUP BY 2, 3 HAVING sum(d) <> 0 ORDER BY 2, x.class COLLATE "C"
		ON CONFLICT (shard, state, class) DO UPDATE SET n = c.n + excluded.n;
	END IF;
	RETURN NULL;
END $$;
