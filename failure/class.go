package failure

// Class is the kind of failure an error represents. The zero value is None.
// Classes are small integers, safe to use as map keys and to compare.
type Class uint8

// The classes, in no particular order of severity. String gives each one a
// stable lower-case label for metrics and logs.
const (
	None               Class = iota // no error at all
	Timeout                         // connect, read or deadline timeout before a response
	DNSNotFound                     // the name does not exist
	DNSTemporary                    // the resolver failed or timed out; the name may exist
	Refused                         // connection refused (ECONNREFUSED)
	HostUnreachable                 // no route to the host (EHOSTUNREACH)
	NetworkUnreachable              // no route to the network (ENETUNREACH)
	Aborted                         // connection aborted (ECONNABORTED)
	Reset                           // connection reset by the peer (ECONNRESET, EPIPE)
	Canceled                        // the caller cancelled (context.Canceled)
	TLS                             // TLS handshake, alert or certificate failure
	Policy                          // refused locally by policy before any network work
	Unknown                         // anything else
)

// labels is indexed by Class; the values are metric-label safe.
var labels = [...]string{
	None:               "none",
	Timeout:            "timeout",
	DNSNotFound:        "dns_not_found",
	DNSTemporary:       "dns_temporary",
	Refused:            "refused",
	HostUnreachable:    "host_unreachable",
	NetworkUnreachable: "network_unreachable",
	Aborted:            "aborted",
	Reset:              "reset",
	Canceled:           "canceled",
	TLS:                "tls",
	Policy:             "policy",
	Unknown:            "unknown",
}

// String returns the class's label, such as "timeout" or "dns_not_found".
// A value outside the defined classes reads "unknown".
func (c Class) String() string {
	if int(c) < len(labels) {
		return labels[c]
	}
	return labels[Unknown]
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
	all := make([]Class, 0, len(labels))
	for c := range labels {
		all = append(all, Class(c))
	}
	return all
}
