-- Verdicts per (policy fingerprint, subject, source). verdict: 0 unknown,
-- 1 available, 2 unavailable.
CREATE TABLE IF NOT EXISTS evidence (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	fingerprint text        NOT NULL,
	subject     text        NOT NULL,
	source      text        NOT NULL,
	verdict     smallint    NOT NULL CHECK (verdict IN (0, 1, 2)),
	reason      text        NOT NULL DEFAULT '',
	checked_at  timestamptz NOT NULL,
	UNIQUE (fingerprint, subject, source)
);

-- Pruning walks the oldest rows through this index, never the table.
CREATE INDEX IF NOT EXISTS evidence_checked ON evidence (checked_at, id);

-- Invalidation looks only at positives.
CREATE INDEX IF NOT EXISTS evidence_positive ON evidence (fingerprint) WHERE verdict = 1;

-- The row count, kept by statement-level triggers, so that enforcing the
-- cap never counts the table.
CREATE TABLE IF NOT EXISTS evidence_rows (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	n   bigint  NOT NULL
);
INSERT INTO evidence_rows (one, n) VALUES (true, 0) ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION evidence_rows_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE evidence_rows SET n = n + (SELECT count(*) FROM evidence_new) WHERE one;
	RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION evidence_rows_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE evidence_rows SET n = n - (SELECT count(*) FROM evidence_old) WHERE one;
	RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS evidence_rows_insert ON evidence;
CREATE TRIGGER evidence_rows_insert AFTER INSERT ON evidence
	REFERENCING NEW TABLE AS evidence_new
	FOR EACH STATEMENT EXECUTE FUNCTION evidence_rows_inserted();

DROP TRIGGER IF EXISTS evidence_rows_delete ON evidence;
CREATE TRIGGER evidence_rows_delete AFTER DELETE ON evidence
	REFERENCING OLD TABLE AS evidence_old
	FOR EACH STATEMENT EXECUTE FUNCTION evidence_rows_deleted();
