// Package upstream is the daemon's pool of upstream HTTP/1.1 connections:
// the outbound half of the forward proxy's own engine, and what the fetch
// route sends through too.
//
// The proxy's hot path is a small request answered with a small body, and
// on it http.Transport's shape was most of the daemon's CPU: a read and a
// write goroutine per connection and the channel hand-offs between them
// and the caller, per request. Here a plain bodyless http:// request is
// one buffered write and a read of the answer from the connection's
// buffered reader, on the caller's goroutine, and the connection goes back
// to the pool when its body has been read to the end. A reused connection
// that fails before any byte of an answer is retried once on a fresh one,
// for a request that can be replayed. Everything else goes to the
// http.Transport the pool is given.
//
// The pool implements internal/hop's Sender: the forwarding rules (the
// guard ticket, the header and body-idle timeouts) stay in the daemon's
// handler, which learns the phases of each request (connected, request
// written) through hop.Phases. CopyEndToEnd is the header rule both
// directions of a hop share.
package upstream
