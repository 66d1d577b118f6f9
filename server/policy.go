package server

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// The destination policy keeps the fetch route and the proxy from being
// used to reach the daemon's own machine or its private network (SSRF). It
// is applied in the dialer's Control hook, which runs after DNS resolution
// and before connect(2), for every address the dialer tries. A hostname
// that resolves to 10.0.0.1 is therefore refused just like the literal, and
// no packet is ever sent to a refused address.

// refusedPrefixes are ranges that are not the public internet, beyond what
// netip.Addr's own predicates cover.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"; connecting to it reaches the local host on Linux
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT, shared address space
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking networks
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// destinationRefusal says why ip may not be dialled, or "" if it may.
func destinationRefusal(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "destination address is not valid"
	case ip.IsLoopback():
		return "destination is a loopback address"
	case ip.IsPrivate():
		return "destination is a private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "destination is a link-local address"
	case ip.IsUnspecified():
		return "destination is an unspecified address"
	case ip.IsMulticast():
		return "destination is a multicast address"
	}
	for _, p := range refusedPrefixes {
		if p.Contains(ip) {
			return "destination is a reserved address"
		}
	}
	return ""
}

// policyControl is a net.Dialer.Control that enforces the destination
// policy. The address it sees is always an IP literal with a port.
func policyControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &failure.PolicyError{Reason: "destination address is not an IP address"}
	}
	if reason := destinationRefusal(ap.Addr()); reason != "" {
		return &failure.PolicyError{Reason: reason}
	}
	return nil
}

// dialer is the one dialer for the fetch route's transport and the proxy's
// CONNECT tunnels, so both enforce the same policy.
type dialer struct {
	d net.Dialer
}

func newDialer(allowPrivate bool, connectTimeout time.Duration) *dialer {
	d := &dialer{d: net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}}
	if !allowPrivate {
		d.d.Control = policyControl
	}
	return d
}

func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return d.d.DialContext(ctx, network, address)
}
