-- The evidence policy in force on every node that shares the store: the
-- fingerprint verdicts are recorded and read under, set by
-- evidence.Book.InvalidatePolicy. No row: none was stored, and each node
-- uses the fingerprint it was configured with.
CREATE TABLE IF NOT EXISTS evidence_policy (
	id          integer     PRIMARY KEY CHECK (id = 1),
	fingerprint text        NOT NULL,
	updated_at  timestamptz NOT NULL
);
