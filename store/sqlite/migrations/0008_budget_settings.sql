-- Budget settings changed at run time (SetSource, RemoveSource, SetLimits,
-- Pause, ReportLimit): one record for the whole cluster, over the base
-- configuration each node is started with. doc is the budget package's
-- JSON: {"paused": bool, "limits": {...}, "sources": {name: {"source":
-- {...}, "reported": n}}}, every field optional (absent: the base
-- applies). generation is bumped by every change (compare-and-set); every
-- admission transaction reads it and refuses admissions planned under
-- another, so that each node's next admission sees every change.
CREATE TABLE IF NOT EXISTS budget_settings (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	generation INTEGER NOT NULL,
	doc        BLOB    NOT NULL,
	updated_at INTEGER NOT NULL -- unix microseconds; 0 never changed
);

INSERT INTO budget_settings (id, generation, doc, updated_at) VALUES (1, 0, '{}', 0)
	ON CONFLICT (id) DO NOTHING;
