// Package evidence remembers what checks found out about a subject, and for
// how long that finding may be trusted.
//
// A check is made by one source (an indexer, a debrid account, a resolver)
// about one subject (a title, a release, a host) under one policy: the
// settings that decided what "acceptable" meant when the check ran. The
// policy is reduced to a fingerprint string (see Fingerprint), and a verdict
// is only ever read back under the fingerprint it was recorded with, so a
// settings change can never make an old finding look current.
//
// The rules err towards "unknown":
//
//   - A positive verdict (Available) holds for Config.TTL (6 h), then reads
//     as Unknown until a new check renews it.
//   - A negative verdict (Unavailable) comes only from a check that really
//     ran and said no. Timeouts, exhausted allowances, unsupported checks and
//     errors are recorded as Unknown and never overwrite a real verdict.
//   - Summarize looks at every source: a subject is Available when any source
//     holds a fresh positive, Unavailable only when no source does and at
//     least one real check said no, and Unknown otherwise. One failing source
//     therefore never hides a subject.
//   - InvalidatePolicy switches to a new fingerprint and deletes the
//     positives recorded under any other. The current fingerprint is kept
//     in the store, so the switch applies to every node on it (each reads
//     the current one at its next call) and outlives restarts;
//     Config.Fingerprint applies only until a policy is stored.
//
// The verdict table is capped (Config.MaxRows, 60 000 rows): each write
// trims the oldest rows in a small batch through an index on the check
// time, so the cap holds without ever scanning the table.
//
// Readers that must never wait (a page render, a list filter) use
// Book.Snapshot: the last computed set of per-subject summaries. A set that
// is older than Config.MaxAge (15 s), or older than a verdict or an
// invalidation made through the same Book, is still served, while exactly
// one background refresh computes its successor. Before the first set
// exists, Snapshot returns an empty set whose Known method is false.
//
// A Book is safe for concurrent use. Its durable state lives in a Store
// (store/sqlite or store/postgres); close the Book before its store.
package evidence
