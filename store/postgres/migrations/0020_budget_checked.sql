-- A source's own exhaustion may end before the day does (an indexer that
-- says when to come back): closed_until replaces the closed flag. NULL:
-- never closed. A flag set before this migration closed the counter for
-- the rest of its day.
ALTER TABLE budget_usage ADD COLUMN closed_until timestamptz;
UPDATE budget_usage SET closed_until = ((day + 1)::timestamp AT TIME ZONE 'UTC') WHERE closed;
ALTER TABLE budget_usage DROP COLUMN closed;

-- Counters are kept within 0..2^53 (budget.MaxAmount). Before that rule an
-- overflowing figure could wrap a counter negative; that means the day's
-- allowance was blown, so such a counter reads as full.
UPDATE budget_usage SET used = 9007199254740992 WHERE used < 0 OR used > 9007199254740992;
