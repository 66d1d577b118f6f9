// Package leader elects one node of a cluster to run the periodic loops
// (feed polls, evidence refresh, pruning, lease rescue), using the shared
// store.
//
// On PostgreSQL the leader holds a lease row: the holder's node id, an
// expiry, and a term that grows with every change of holder. The term is a
// fencing token (TermFromContext): work stamped with an older term can be
// recognised and refused. The leader renews the lease every RenewEvery;
// followers try to take it as often, and at once when it expires or is
// freed. A leader that cannot renew gives up — cancelling its work's
// context — half a renewal interval before the lease expires in the store,
// so that the next leader never overlaps it as long as the nodes' clocks
// agree to better than that: on PostgreSQL they read one clock, the
// database's (see Config.Now). A leader that stops resigns, freeing the lease
// for the next node at once.
//
// A lease row was chosen over an advisory lock: it gives a term for free,
// it survives connection resets (a killed connection does not drop
// leadership while the lease is still valid, and a half-dead node cannot
// keep it past its expiry), and it needs no dedicated connection.
//
// On SQLite, a single node, every elector leads at once with term 1 and
// never needs to renew: there is nobody to elect against, and a restart
// must not wait for its own dead predecessor's lease.
package leader
