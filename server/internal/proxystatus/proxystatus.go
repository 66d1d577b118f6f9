// Package proxystatus is the daemon's side of the fast-fail contract over
// HTTP. Every answer the daemon makes itself carries a Proxy-Status header
// (RFC 9209) naming hostguard and what went wrong; an upstream's answer
// never does, since DropOwn strips the members that would speak for
// hostguard from what an upstream sends. So a client tells "hostguard
// refused without contacting the host" (error=destination_unavailable)
// from the upstream's own 503 by a header, which survives where bodies
// are lost (a CONNECT refusal in most HTTP libraries).
//
// Its details, like every message the daemon writes, never include a
// path, a query or a credential, and avoid the phrases renderers take for
// "timed out", an HTTP error code or an authentication failure; the
// endpoint named in them is user data, so clients recognise the marker
// (the error type) before any phrase matching.
package proxystatus

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/internal/sflist"
)

// Name is the daemon's Proxy-Status member name.
const Name = "hostguard"

// Upstream names a failure to get an upstream answer: its Proxy-Status
// error type and details.
func Upstream(err error) (errType, details string) {
	class := failure.Classify(err)
	switch class {
	case failure.Timeout:
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return "connection_timeout", "the upstream did not accept a connection in time"
		}
		return "http_response_timeout", "the upstream sent nothing back in time"
	case failure.Refused:
		return "connection_refused", "the upstream refused the connection"
	case failure.DNSNotFound:
		return "dns_error", "the upstream name does not exist"
	case failure.DNSTemporary:
		return "dns_error", "the upstream name could not be resolved"
	case failure.TLS:
		if isCertError(err) {
			return "tls_certificate_error", "the upstream's certificate was not accepted"
		}
		return "tls_protocol_error", "the TLS handshake with the upstream failed"
	case failure.Reset, failure.Aborted:
		return "connection_terminated", "the upstream closed the connection"
	case failure.HostUnreachable, failure.NetworkUnreachable:
		return "destination_ip_unroutable", "no route to the upstream"
	}
	return "http_protocol_error", "the upstream failed (" + class.String() + ")"
}

func isCertError(err error) bool {
	var (
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		inv x509.CertificateInvalidError
		hn  x509.HostnameError
	)
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &inv) || errors.As(err, &hn)
}

// Value is the header's value: the member, its error type and, if any,
// its details as a structured-field string (printable ASCII; anything
// else becomes '?', quotes and backslashes escaped).
func Value(errType, details string) string {
	v := Name + "; error=" + errType
	if details == "" {
		return v
	}
	return v + `; details="` + sfString(details) + `"`
}

func sfString(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// ReasonPhrase makes text safe as an HTTP status line's reason: printable
// ASCII only, bounded.
func ReasonPhrase(text string) string {
	text = strings.TrimPrefix(text, "server: ")
	var b strings.Builder
	for _, c := range text {
		if b.Len() >= 200 {
			break
		}
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// DropOwn removes from h, the headers of an upstream's answer that
// the daemon passes on, every Proxy-Status member named hostguard. Only
// the daemon speaks for itself: an upstream that sent its own
// "hostguard; error=destination_unavailable" would otherwise pass for a
// fast-fail, and a client would stop calling a host that answers. Other
// intermediaries' members stay, in order; a value whose quotes do not
// close cannot be split, and goes whole if it names hostguard at all.
func DropOwn(h http.Header) {
	vv, ok := h["Proxy-Status"]
	if !ok {
		return
	}
	kept := make([]string, 0, len(vv))
	for _, v := range vv {
		if v = withoutOwnMembers(v); strings.TrimSpace(v) != "" {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		delete(h, "Proxy-Status")
		return
	}
	h["Proxy-Status"] = kept
}

// withoutOwnMembers is v, a Proxy-Status list, without its hostguard
// members.
func withoutOwnMembers(v string) string {
	if !strings.Contains(strings.ToLower(v), Name) {
		return v
	}
	members, ok := sflist.Members(v)
	if !ok {
		return ""
	}
	kept := members[:0]
	for _, m := range members {
		if !strings.EqualFold(sflist.Name(m), Name) {
			kept = append(kept, strings.TrimSpace(m))
		}
	}
	return strings.Join(kept, ", ")
}
