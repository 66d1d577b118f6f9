-- retry: waiting claims are woken in process on SQLite (see
-- store/sqlite/retry_wake.go); this version exists so that both engines
-- number their schema alike.
SELECT 1;
