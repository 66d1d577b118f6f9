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

-- budget_admit checks and takes one admission in one statement (one round
-- trip, so row locks are held for as short a time as possible). Charges
-- come sorted by (scope, kind): every admission locks rows in that order,
-- then the pacing row, so concurrent admissions cannot deadlock. A limit
-- of -1 only records.
CREATE OR REPLACE FUNCTION budget_admit(
	p_day date, p_now timestamptz,
	p_scopes text[], p_kinds text[], p_costs bigint[], p_limits bigint[],
	p_pace_key text, p_pace_us bigint, p_max_wait_us bigint, p_touch boolean,
	p_grant_id text, p_grant_source text, p_grant_kind text, p_grant_cost bigint)
RETURNS TABLE (o_admitted boolean, o_refused integer, o_used bigint, o_closed boolean, o_slot timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	v_used   bigint;
	v_closed boolean;
	v_next   timestamptz;
	v_slot   timestamptz := p_now;
	v_pace   interval := p_pace_us * interval '1 microsecond';
BEGIN
	FOR i IN 1 .. coalesce(array_length(p_scopes, 1), 0) LOOP
		SELECT u.used, u.closed INTO v_used, v_closed FROM budget_usage u
		 WHERE u.day = p_day AND u.scope = p_scopes[i] AND u.kind = p_kinds[i] FOR UPDATE;
		IF NOT FOUND THEN
			INSERT INTO budget_usage (day, scope, kind, used)
			VALUES (p_day, p_scopes[i], p_kinds[i], budget_initial(p_day, p_scopes[i], p_kinds[i]))
			ON CONFLICT DO NOTHING;
			SELECT u.used, u.closed INTO v_used, v_closed FROM budget_usage u
			 WHERE u.day = p_day AND u.scope = p_scopes[i] AND u.kind = p_kinds[i] FOR UPDATE;
		END IF;
		IF p_limits[i] >= 0 AND (v_closed OR v_used + p_costs[i] > p_limits[i]) THEN
			RETURN QUERY SELECT false, i - 1, v_used, v_closed, NULL::timestamptz;
			RETURN;
		END IF;
	END LOOP;

	IF p_pace_key <> '' THEN
		SELECT pc.next_at INTO v_next FROM budget_pace pc WHERE pc.source = p_pace_key FOR UPDATE;
		IF NOT FOUND THEN
			INSERT INTO budget_pace (source, next_at) VALUES (p_pace_key, '-infinity') ON CONFLICT DO NOTHING;
			SELECT pc.next_at INTO v_next FROM budget_pace pc WHERE pc.source = p_pace_key FOR UPDATE;
		END IF;
		IF p_touch THEN
			UPDATE budget_pace SET next_at = greatest(v_next, p_now + v_pace) WHERE source = p_pace_key;
		ELSE
			v_slot := greatest(v_next, p_now);
			IF v_slot > p_now + p_max_wait_us * interval '1 microsecond' THEN
				RETURN QUERY SELECT false, -1, 0::bigint, false, v_slot;
				RETURN;
			END IF;
			UPDATE budget_pace SET next_at = v_slot + v_pace WHERE source = p_pace_key;
		END IF;
	END IF;

	UPDATE budget_usage u SET used = u.used + c.cost
	  FROM unnest(p_scopes, p_kinds, p_costs) AS c(scope, kind, cost)
	 WHERE u.day = p_day AND u.scope = c.scope AND u.kind = c.kind;

	IF p_grant_id <> '' THEN
		INSERT INTO budget_grants (id, day, source, kind, cost, created_at)
		VALUES (p_grant_id, p_day, p_grant_source, p_grant_kind, p_grant_cost, p_now);
	END IF;
	RETURN QUERY SELECT true, -1, 0::bigint, false, v_slot;
END
$$;
