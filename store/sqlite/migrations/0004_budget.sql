-- Admission budgets: usage counters keyed by UTC day, pacing slots, and
-- byte reservations that must be settled.
CREATE TABLE IF NOT EXISTS budget_usage (
	day    INTEGER NOT NULL, -- unix microseconds of the UTC midnight
	scope  TEXT    NOT NULL, -- source name, or '' for cluster-wide counters
	kind   TEXT    NOT NULL,
	used   INTEGER NOT NULL DEFAULT 0,
	closed INTEGER NOT NULL DEFAULT 0, -- 1: refuse limited charges for the rest of the day
	PRIMARY KEY (day, scope, kind)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS budget_pace (
	source  TEXT PRIMARY KEY,
	next_at INTEGER NOT NULL -- unix microseconds: the first free slot
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS budget_grants (
	id         TEXT PRIMARY KEY,
	day        INTEGER NOT NULL,
	source     TEXT    NOT NULL,
	kind       TEXT    NOT NULL,
	cost       INTEGER NOT NULL,
	actual     INTEGER,          -- NULL while open
	created_at INTEGER NOT NULL,
	closed_at  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS budget_grants_day ON budget_grants (day);
