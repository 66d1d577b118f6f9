package failure

// Class is the kind of failure an error represents: a lower-case label
// such as "timeout" or "dns_not_found", so that string(c) is the label a
// metric, a log line or a retry scheduler wants. The zero value, the empty
// string, is None: no failure, which has no label of its own (String reads
// "none").
type Class string

// The classes, in no particular order of severity. Their values are
// stable: they appear in metrics, logs and stored retry histories.
const (
	None               Class = ""                    // no error at all
	Timeout            Class = "timeout"             // connect, read or deadline timeout before a response
	DNSNotFound        Class = "dns_not_found"       // the name does not exist
	DNSTemporary       Class = "dns_temporary"       // the resolver failed or timed out; the name may exist
	Refused            Class = "refused"             // connection refused (ECONNREFUSED)
	HostUnreachable    Class = "host_unreachable"    // no route to the host (EHOSTUNREACH)
	NetworkUnreachable Class = "network_unreachable" // no route to the network (ENETUNREACH)
	Aborted            Class = "aborted"             // connection aborted (ECONNABORTED)
	Reset              Class = "reset"               // connection reset by the peer (ECONNRESET, EPIPE)
	Canceled           Class = "canceled"            // the caller cancelled (context.Canceled)
	TLS                Class = "tls"                 // TLS handshake, alert or certificate failure
	Policy             Class = "policy"              // refused locally by policy before any network work
	Unknown            Class = "unknown"             // anything else
)

// all lists every class in declaration order.
var all = [...]Class{None, Timeout, DNSNotFound, DNSTemporary, Refused, HostUnreachable,
	NetworkUnreachable, Aborted, Reset, Canceled, TLS, Policy, Unknown}

// String returns the class's label, such as "timeout" or "dns_not_found";
// None reads "none". A value that is none of the defined classes (a
// conversion from arbitrary text) reads "unknown", so that String is
// always a safe metric label.
func (c Class) String() string {
	switch {
	case c == None:
		return "none"
	case c.Valid():
		return string(c)
	}
	return string(Unknown)
}

// Valid reports whether c is one of the defined classes, None included.
func (c Class) Valid() bool {
	for _, k := range all {
		if c == k {
			return true
		}
	}
	return false
}

// HostLevel reports whether the class is evidence that the host itself did
// not answer. It is true for Timeout, DNSNotFound, DNSTemporary, Refused,
// HostUnreachable, NetworkUnreachable and Aborted, and false for the rest.
func (c Class) HostLevel() bool {
	switch c {
	case Timeout, DNSNotFound, DNSTemporary, Refused, HostUnreachable, NetworkUnreachable, Aborted:
		return true
	}
	return false
}

// Classes returns every class from None to Unknown, for example to
// pre-register one metric series per label.
func Classes() []Class {
	return append([]Class(nil), all[:]...)
}
