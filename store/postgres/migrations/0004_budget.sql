-- Admission budgets: usage counters keyed by UTC day, pacing slots, and
-- byte reservations that must be settled. Hot rows are updated on every
-- admission, so the tables leave room in each page for HOT updates.
CREATE TABLE IF NOT EXISTS budget_usage (
	day    date    NOT NULL,
	scope  text    NOT NULL, -- source name, or '' for cluster-wide counters
	kind   text    NOT NULL,
	used   bigint  NOT NULL DEFAULT 0,
	closed boolean NOT NULL DEFAULT false, -- refuse limited charges for the rest of the day
	PRIMARY KEY (day, scope, kind)
) WITH (fillfactor = 50);

CREATE TABLE IF NOT EXISTS budget_pace (
	source  text PRIMARY KEY,
	next_at timestamptz NOT NULL -- the first free slot
) WITH (fillfactor = 50);

CREATE TABLE IF NOT EXISTS budget_grants (
	id         text PRIMARY KEY,
	day        date        NOT NULL,
	source     text        NOT NULL,
	kind       text        NOT NULL,
	cost       bigint      NOT NULL,
	actual     bigint,                -- NULL while open
	created_at timestamptz NOT NULL,
	closed_at  timestamptz
);
CREATE INDEX IF NOT EXISTS budget_grants_day ON budget_grants (day);

-- budget_initial is what a counter holds before its first charge: zero,
-- except the total cap, which starts at the day's sum of source counters so
-- that a cap set during the day counts the day's earlier work.
CREATE OR REPLACE FUNCTION budget_initial(p_day date, p_scope text, p_kind text) RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN p_scope = '' AND p_kind = 'total'
		THEN (SELECT coalesce(sum(u.used), 0)::bigint FROM budget_usage u WHERE u.day = p_day AND u.kind = 'source')
		ELSE 0 END
$$;
