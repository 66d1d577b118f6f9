// Package failure sorts a Go error from an outbound request into a small set
// of classes and says whether the class is evidence that the remote host
// itself did not answer.
//
// Classify is the one function most callers want:
//
//	class := failure.Classify(err)
//	if class.HostLevel() {
//		// count it against the endpoint
//	}
//
// Only errors that mean "nobody answered" are host-level: timeouts before a
// response, DNS not-found and DNS temporary failure, connection refused,
// host or network unreachable, and connection aborted. Everything else is
// inconclusive, because a circuit breaker that counts it would refuse hosts
// that work: a reset comes from a host that is alive, a cancellation comes
// from the caller, a TLS or certificate error comes from a host that spoke
// TLS, a policy refusal (see PolicyError) never reached the network, and an
// error nobody recognises proves nothing.
//
// Classification looks at types and sentinel values along the whole error
// chain (errors.Is and errors.As, including errors that wrap several), never
// at message text: errors.New("ETIMEDOUT") is Unknown.
//
// When one chain matches several classes, the first rule below wins:
//
//  1. nil is None.
//  2. A PolicyError (or anything wrapping ErrPolicy) is Policy: the request
//     was never sent, whatever else the chain says.
//  3. context.Canceled is Canceled, even if the chain also reports a
//     timeout: the caller gave up, so nothing was learnt about the host.
//  4. A TLS or certificate error (crypto/tls, crypto/x509, an alert from
//     the peer, or http.ErrSchemeMismatch) is TLS: bytes came back, so the
//     host is up.
//  5. A *net.DNSError is DNSNotFound (IsNotFound) or DNSTemporary
//     (IsTemporary or IsTimeout); other DNS errors fall through.
//  6. A syscall.Errno: ECONNREFUSED, EHOSTUNREACH, ENETUNREACH,
//     ECONNABORTED, ECONNRESET (and EPIPE, a write to a reset connection)
//     and ETIMEDOUT map to their classes.
//  7. context.DeadlineExceeded, os.ErrDeadlineExceeded, or any error in the
//     chain whose Timeout method reports true is Timeout.
//  8. Everything else is Unknown.
//
// The errno rules use the Unix values; on Windows Go reports different
// numbers for these conditions, so such errors classify by rule 7 or as
// Unknown.
package failure
