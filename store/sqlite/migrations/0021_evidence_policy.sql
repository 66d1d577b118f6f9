-- The evidence policy in force on every node that shares the store: the
-- fingerprint verdicts are recorded and read under, set by
-- evidence.Book.InvalidatePolicy. No row: none was stored, and each node
-- uses the fingerprint it was configured with. updated_at is unix
-- microseconds.
CREATE TABLE IF NOT EXISTS evidence_policy (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	fingerprint TEXT    NOT NULL,
	updated_at  INTEGER NOT NULL
);
