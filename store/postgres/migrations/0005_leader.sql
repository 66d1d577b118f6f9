-- Leader election: one lease row per election name. The term grows with
-- every change of holder and serves as a fencing token.
CREATE TABLE IF NOT EXISTS leader_leases (
	name       text PRIMARY KEY,
	node       text        NOT NULL, -- '' when nobody holds the lease
	term       bigint      NOT NULL,
	expires_at timestamptz NOT NULL
);
