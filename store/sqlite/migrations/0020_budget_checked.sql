-- A source's own exhaustion may end before the day does (an indexer that
-- says when to come back): closed_until replaces the closed flag. It is
-- unix microseconds; 0: never closed. A flag set before this migration
-- closed the counter for the rest of its day.
ALTER TABLE budget_usage ADD COLUMN closed_until INTEGER NOT NULL DEFAULT 0;
UPDATE budget_usage SET closed_until = day + 86400000000 WHERE closed <> 0;
ALTER TABLE budget_usage DROP COLUMN closed;

-- Counters are kept within 0..2^53 (budget.MaxAmount). Before that rule an
-- overflowing figure could wrap a counter negative or, on SQLite, turn it
-- into a REAL; either means the day's allowance was blown, so such a
-- counter reads as full.
UPDATE budget_usage SET used = 9007199254740992
 WHERE typeof(used) <> 'integer' OR used < 0 OR used > 9007199254740992;
