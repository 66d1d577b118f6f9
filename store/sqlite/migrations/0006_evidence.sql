-- Verdicts per (policy fingerprint, subject, source). verdict: 0 unknown,
-- 1 available, 2 unavailable. checked_at is unix microseconds, UTC.
CREATE TABLE IF NOT EXISTS evidence (
	id          INTEGER PRIMARY KEY,
	fingerprint TEXT    NOT NULL,
	subject     TEXT    NOT NULL,
	source      TEXT    NOT NULL,
	verdict     INTEGER NOT NULL CHECK (verdict IN (0, 1, 2)),
	reason      TEXT    NOT NULL DEFAULT '',
	checked_at  INTEGER NOT NULL,
	UNIQUE (fingerprint, subject, source)
);

-- Pruning walks the oldest rows through this index, never the table.
CREATE INDEX IF NOT EXISTS evidence_checked ON evidence (checked_at, id);

-- Invalidation looks only at positives.
CREATE INDEX IF NOT EXISTS evidence_positive ON evidence (fingerprint) WHERE verdict = 1;

-- The row count, kept by triggers, so that enforcing the cap never counts
-- the table.
CREATE TABLE IF NOT EXISTS evidence_rows (
	one INTEGER PRIMARY KEY CHECK (one = 1),
	n   INTEGER NOT NULL
);
INSERT OR IGNORE INTO evidence_rows (one, n) VALUES (1, 0);

CREATE TRIGGER IF NOT EXISTS evidence_rows_insert AFTER INSERT ON evidence
BEGIN
	UPDATE evidence_rows SET n = n + 1 WHERE one = 1;
END;

CREATE TRIGGER IF NOT EXISTS evidence_rows_delete AFTER DELETE ON evidence
BEGIN
	UPDATE evidence_rows SET n = n - 1 WHERE one = 1;
END;
