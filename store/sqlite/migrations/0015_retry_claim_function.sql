-- retry: the PostgreSQL store's claim became a stored function; this
-- version exists so that both engines number their schema alike.
SELECT 1;
