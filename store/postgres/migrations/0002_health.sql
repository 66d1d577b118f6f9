-- health: one durable backoff record per normalised host name.
-- NULL times mean never / no backoff. Names sort in byte order (COLLATE "C")
-- so that paging by name agrees with the SQLite store and ignores locale.
-- Invariant: backoff_until is set only while consecutive_fails > 0, so the
-- partial index below holds every name either view can exclude, with what
-- both need: filters and the unhealthy and backoff lists can read only it.
CREATE TABLE IF NOT EXISTS health_hosts (
	name              text COLLATE "C" PRIMARY KEY,
	display           text NOT NULL,
	consecutive_fails integer NOT NULL DEFAULT 0,
	backoff_until     timestamptz,
	last_success_at   timestamptz,
	last_failure_at   timestamptz,
	successes         bigint NOT NULL DEFAULT 0,
	failures          bigint NOT NULL DEFAULT 0,
	ignored_failures  bigint NOT NULL DEFAULT 0,
	updated_at        timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS health_hosts_failing ON health_hosts (name, backoff_until) WHERE consecutive_fails > 0;
