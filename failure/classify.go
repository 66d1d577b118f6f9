package failure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"syscall"
)

// Classify returns the class of err. It never looks at message text; the
// package documentation lists which rule wins when a chain matches several.
func Classify(err error) Class {
	switch {
	case err == nil:
		return None
	case errors.Is(err, ErrPolicy):
		return Policy
	case errors.Is(err, context.Canceled):
		return Canceled
	case isTLS(err):
		return TLS
	}
	if c, ok := dnsClass(err); ok {
		return c
	}
	if c, ok := errnoClass(err); ok {
		return c
	}
	if isTimeout(err) {
		return Timeout
	}
	return Unknown
}

func dnsClass(err error) (Class, bool) {
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		return None, false
	}
	switch {
	case dnsErr.IsNotFound:
		return DNSNotFound, true
	case dnsErr.IsTemporary, dnsErr.IsTimeout:
		return DNSTemporary, true
	}
	return None, false
}

func errnoClass(err error) (Class, bool) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return None, false
	}
	switch errno {
	case syscall.ECONNREFUSED:
		return Refused, true
	case syscall.EHOSTUNREACH:
		return HostUnreachable, true
	case syscall.ENETUNREACH:
		return NetworkUnreachable, true
	case syscall.ECONNABORTED:
		return Aborted, true
	case syscall.ECONNRESET, syscall.EPIPE:
		return Reset, true
	case syscall.ETIMEDOUT:
		return Timeout, true
	}
	return None, false
}

// isTLS reports whether the chain holds a TLS or certificate error: proof
// that something at the address answered the handshake. That includes
// http.ErrSchemeMismatch, which net/http returns instead of the TLS error
// when a plain HTTP server answered an https request.
func isTLS(err error) bool {
	// crypto/tls and crypto/x509 return most of these as values; the
	// pointer forms are matched too because wrapping code may take their
	// address.
	if has[tls.RecordHeaderError](err) || has[*tls.RecordHeaderError](err) ||
		has[tls.AlertError](err) || has[*tls.AlertError](err) ||
		has[*tls.CertificateVerificationError](err) || has[*tls.ECHRejectionError](err) ||
		has[x509.UnknownAuthorityError](err) || has[*x509.UnknownAuthorityError](err) ||
		has[x509.HostnameError](err) || has[*x509.HostnameError](err) ||
		has[x509.CertificateInvalidError](err) || has[*x509.CertificateInvalidError](err) ||
		has[x509.SystemRootsError](err) || has[*x509.SystemRootsError](err) ||
		errors.Is(err, http.ErrSchemeMismatch) {
		return true
	}
	// crypto/tls reports an alert received from the peer as a *net.OpError
	// with this Op and an unexported alert type, so the Op field is the
	// only structured handle on it.
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "remote error"
}

// has reports whether err's chain holds an error of type T.
func has[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// isTimeout reports whether any error in the chain is a deadline or says
// it timed out. It walks the chain itself rather than asking only the
// outermost net.Error, because wrappers such as *url.Error forward Timeout
// to their direct cause only and would hide a timeout wrapped once more.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	return anyInChain(err, func(e error) bool {
		t, ok := e.(interface{ Timeout() bool })
		return ok && t.Timeout()
	})
}

// anyInChain walks err's tree depth-first, like errors.Is does, and reports
// whether match holds for any node.
func anyInChain(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if anyInChain(e, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
