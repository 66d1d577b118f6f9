// Package connlimit is what every client connection of the daemon passes
// first, on the API's listener and the proxy's: a cap on the connections
// open at once, a share of it per client address, and a scan for request
// heads that declare their body twice.
//
// A connection over the cap, or over its address's share, is accepted,
// answered 503 with Proxy-Status connection_limit_reached and closed, so
// a client learns why instead of waiting in the kernel's backlog.
// ClientPrefix is the one notion of "a client" the daemon counts by, for
// these shares and for wrong tokens alike.
//
// The scan (see BothFramings) exists because net/http reads a request
// with both Content-Length and Transfer-Encoding as chunked and drops the
// length before any handler can see it; only the bytes on the connection
// still say the request was ambiguous.
package connlimit
