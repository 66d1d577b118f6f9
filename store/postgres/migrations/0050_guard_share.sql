-- Guard verdicts shared across nodes (guard.Config.Share): the openings
-- still running, one row per endpoint, so that a node that starts or
-- reconnects loads them; changes travel by NOTIFY. A row whose until has
-- passed means nothing and is replaced by the next opening.
CREATE TABLE IF NOT EXISTS guard_openings (
	endpoint  text        PRIMARY KEY,
	node      text        NOT NULL, -- the node that published it
	opened_at timestamptz NOT NULL,
	since     timestamptz NOT NULL, -- the first counted failure behind it
	until     timestamptz NOT NULL
);

-- The lease on an endpoint's next trial: one node probes for the cluster.
CREATE TABLE IF NOT EXISTS guard_leases (
	endpoint   text        PRIMARY KEY,
	node       text        NOT NULL,
	until      timestamptz NOT NULL, -- the end of the open period it is for
	expires_at timestamptz NOT NULL
);
