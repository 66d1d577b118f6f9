-- Loads the retry benchmark's store with the sqlite3 shell, in one
-- transaction: the same rows retry.Scheduler.Add writes for -n items of
-- which a share -due is due at once, the rest in 1 to 30 days, with
-- random 40-hex ids. Loading ten million items through Add takes an hour
-- on a busy 2-core machine; this takes minutes. Make the schema first
-- with the Go loader, then load, then measure with -reuse:
--
--   go run ./cmd/retrybench -db /tmp/rb/m10.db -n 1 -due 1 -phases stats
--   sqlite3 /tmp/rb/m10.db -cmd ".parameter set @n 10000000" \
--       -cmd ".parameter set @due 1000000" -cmd ".parameter set @now $(date +%s%6N)" \
--       < cmd/retrybench/load.sql
--   go run ./cmd/retrybench -db /tmp/rb/m10.db -n 10000000 -due 0.1 -reuse -phases idle,succeed,retention
PRAGMA cache_size = -4000000;
DELETE FROM retry_items;
BEGIN;
WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < @n - 1)
INSERT INTO retry_items (id, priority, state, ready, next_at, created_at, updated_at)
SELECT lower(hex(randomblob(20))), 0, 0,
       i < @due,
       CASE WHEN i < @due THEN @now ELSE @now + 86400000000 + abs(random()) % (29 * 86400000000) END,
       @now, @now
FROM seq;
COMMIT;
SELECT state, n FROM retry_counts;
