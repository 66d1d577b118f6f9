package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
)

// The fast-fail contract over HTTP. Every answer the daemon makes itself
// carries a Proxy-Status header (RFC 9209) naming hostguard and what went
// wrong; an upstream's answer never does. So a client tells "hostguard
// refused without contacting the host" (error=destination_unavailable)
// from the upstream's own 503 by a header, which survives where bodies
// are lost (a CONNECT refusal in most HTTP libraries).
//
// Its details, like every message the daemon writes, never include a
// path, a query or a credential, and avoid the phrases renderers take for
// "timed out", an HTTP error code or an authentication failure; the
// endpoint named in them is user data, so clients recognise the marker
// (the error type) before any phrase matching.

// proxyName is the Proxy-Status member name.
const proxyName = "hostguard"

// markDaemonAnswer fills in e's Proxy-Status error type and details from
// err, unless its handler already chose them, and the fast_fail field.
func markDaemonAnswer(err error, e *apiError) {
	if open, ok := errors.AsType[*guard.OpenError](err); ok {
		e.FastFail = true
		if e.ProxyStatus == "" {
			e.ProxyStatus = "destination_unavailable"
			e.psDetails = "endpoint " + open.Endpoint + " is not answering; hostguard did not contact it"
		}
		return
	}
	if e.ProxyStatus != "" {
		return
	}
	if pol, ok := errors.AsType[*failure.PolicyError](err); ok {
		e.ProxyStatus = "destination_ip_prohibited"
		e.psDetails = "refused by the destination policy: " + pol.Reason
		return
	}
	if up, ok := errors.AsType[*upstreamError](err); ok {
		e.ProxyStatus, e.psDetails = upstreamStatus(up.err)
		return
	}
	switch {
	case e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge:
		e.ProxyStatus = "http_request_error"
	case e.Status == http.StatusInternalServerError:
		e.ProxyStatus = "proxy_internal_error"
	case e.Status >= 400 && e.Status < 500:
		e.ProxyStatus = "http_request_denied"
	default:
		e.ProxyStatus = "proxy_internal_response"
	}
}

// upstreamStatus names a failure to get an upstream answer.
func upstreamStatus(err error) (errType, details string) {
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

// proxyStatusValue is the header's value: the member, its error type and,
// if any, its details as a structured-field string (printable ASCII;
// anything else becomes '?', quotes and backslashes escaped).
func proxyStatusValue(errType, details string) string {
	v := proxyName + "; error=" + errType
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

// reasonPhrase makes text safe as an HTTP status line's reason: printable
// ASCII only, bounded.
func reasonPhrase(text string) string {
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

// dropOwnStatus removes from h, the headers of an upstream's answer that
// the daemon passes on, every Proxy-Status member named hostguard. Only
// the daemon speaks for itself: an upstream that sent its own
// "hostguard; error=destination_unavailable" would otherwise pass for a
// fast-fail, and a client would stop calling a host that answers. Other
// intermediaries' members stay, in order; a value whose quotes do not
// close cannot be split, and goes whole if it names hostguard at all.
func dropOwnStatus(h http.Header) {
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
	if !strings.Contains(strings.ToLower(v), proxyName) {
		return v
	}
	var members []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			members = append(members, v[start:i])
			start = i + 1
		}
	}
	if quoted {
		return ""
	}
	members = append(members, v[start:])
	kept := members[:0]
	for _, m := range members {
		if !strings.EqualFold(memberName(m), proxyName) {
			kept = append(kept, strings.TrimSpace(m))
		}
	}
	return strings.Join(kept, ", ")
}

// memberName is the name of one list member: a token, or a quoted string
// unescaped, before its parameters.
func memberName(m string) string {
	// Any white space, not only OWS: the kept members are trimmed the
	// same way, and a client may read "\vhostguard" as hostguard too.
	m = strings.TrimSpace(m)
	if !strings.HasPrefix(m, `"`) {
		name, _, _ := strings.Cut(m, ";")
		return strings.TrimSpace(name)
	}
	var b strings.Builder
	for i := 1; i < len(m); i++ {
		switch c := m[i]; c {
		case '\\':
			if i+1 < len(m) {
				i++
				b.WriteByte(m[i])
			}
		case '"':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
