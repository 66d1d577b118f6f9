-- Budget settings changed at run time (SetSource, RemoveSource, SetLimits,
-- Pause, ReportLimit): one record for the whole cluster, over the base
-- configuration each node is started with. doc is the budget package's
-- JSON: {"paused": bool, "limits": {...}, "sources": {name: {"source":
-- {...}, "reported": n}}}, every field optional (absent: the base
-- applies). generation is bumped by every change (compare-and-set); every
-- admission transaction reads it and refuses admissions planned under
-- another, so that each node's next admission sees every change.
CREATE TABLE IF NOT EXISTS budget_settings (
	id         integer     PRIMARY KEY CHECK (id = 1),
	generation bigint      NOT NULL,
	doc        bytea       NOT NULL,
	updated_at timestamptz          -- NULL: never changed
);

INSERT INTO budget_settings (id, generation, doc) VALUES (1, 0, '{}')
	ON CONFLICT (id) DO NOTHING;
