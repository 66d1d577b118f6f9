-- retry: a wake of many parked items of one host (Scheduler.WakeHost)
-- moves the first of them before it returns and the rest in the
-- background, a chunk per transaction. This row is what is left of such a
-- wake: what it wakes, how far it has come, and the count that divides
-- the spread among its chunks. It is written with the wake's first chunk
-- and advanced with each later one, so a wake whose node stops part way
-- is finished by any node's store (see retry_host.go). A newer wake of
-- the same host replaces it.
CREATE TABLE retry_wake_jobs (
	id        bigserial PRIMARY KEY,
	host      text NOT NULL,
	classes   text[] NOT NULL,
	at        timestamptz NOT NULL,
	spread_us bigint NOT NULL,
	total     bigint NOT NULL,
	done      bigint NOT NULL,
	cursor    timestamptz NOT NULL
);
CREATE INDEX retry_wake_jobs_host ON retry_wake_jobs (host);
