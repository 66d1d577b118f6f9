-- health: one durable backoff record per normalised host name.
-- Times are unix microseconds (UTC); 0 means never / no backoff.
-- Invariant: backoff_until > 0 only while consecutive_fails > 0, so the
-- partial index below holds every name either view can exclude, with what
-- both need: filters and the unhealthy and backoff lists read only it.
CREATE TABLE health_hosts (
	name              TEXT PRIMARY KEY,
	display           TEXT NOT NULL,
	consecutive_fails INTEGER NOT NULL DEFAULT 0,
	backoff_until     INTEGER NOT NULL DEFAULT 0,
	last_success_at   INTEGER NOT NULL DEFAULT 0,
	last_failure_at   INTEGER NOT NULL DEFAULT 0,
	successes         INTEGER NOT NULL DEFAULT 0,
	failures          INTEGER NOT NULL DEFAULT 0,
	ignored_failures  INTEGER NOT NULL DEFAULT 0,
	updated_at        INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX health_hosts_failing ON health_hosts (name, backoff_until) WHERE consecutive_fails > 0;
