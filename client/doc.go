// Package client is a Go client of a running hostguard daemon, for Go
// programs that share one daemon (and its store) with other processes and
// languages rather than run the library in process.
//
// It offers what the Python and TypeScript clients in clients/ offer: the
// retry queue (Items), the connectivity guard (Guard), the host tracker
// (Hosts), the admission budget (Budget), the feeds (Feeds) and the
// evidence book (Evidence). The bodies it sends and reads are package
// api's, the same types the daemon encodes, so a field the daemon adds is a
// field this client reads. Fetch is their fetch: one request through the
// daemon's guard, the upstream's answer returned whatever its status.
// Guard.Run is their guarded: a request of the caller's own under a ticket
// kept alive while it runs and reported after. Items.All and Hosts.All
// walk the pages of a list.
//
// Every call takes a context, which bounds it: the client sets no timeout
// of its own, because a blocking claim or a budget wait may rightly take
// long. Every refusal of the daemon is an *Error carrying the HTTP status,
// a Code chosen from the status, the route and the answer's fields (never
// its text), and the Retry-After the daemon sent; errors.Is matches it
// against ErrLeaseLost, ErrFastFail, ErrNotFound and the other sentinels.
//
// The client never goes through HTTP_PROXY: the daemon is usually that
// proxy, and calls to it must not loop back into it. It follows no
// redirects.
package client
