package netpolicy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// The policy refuses every address that the IANA special-purpose
// registries (specialPurpose) say is not globally reachable, plus what
// they leave out or leave to their RFCs:
//   - multicast (its own registry) and, for IPv6, anything outside the
//     global unicast space 2000::/3 that no row allows (the rest of that
//     space is unassigned, reserved by the IETF);
//   - every address inside ::/96 (IPv4-compatible, deprecated by RFC 4291)
//     and ::ffff:0:0:0/96 (SIIT's IPv4-translated form, RFC 2765), which a
//     stack may deliver to the IPv4 address in their last 32 bits;
//   - Teredo (2001::/32), the old 6to4 relay anycast (192.88.99.0/24) and
//     the retired ORCHID block (2001:10::/28), whose rows say N/A;
//   - 6to4 (2002::/16) and the well-known NAT64 prefix (64:ff9b::/96) are
//     judged by the IPv4 address they carry, which a gateway may deliver
//     to; fec0::/10 (site-local, deprecated by RFC 3879) is refused as
//     some stacks still route it as private.
var (
	nat64Prefix   = pfx("64:ff9b::/96") // RFC 6052: the last 32 bits
	sixToFour     = pfx("2002::/16")    // RFC 3056: bits 16 to 48
	v4Compatible  = pfx("::/96")
	siitPrefix    = pfx("::ffff:0:0:0/96")
	siteLocal     = pfx("fec0::/10")
	globalUnicast = pfx("2000::/3")
)

// destinationRefusal says why ip may not be dialled, or "" if it may.
func destinationRefusal(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return "destination address is not valid"
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64Prefix.Contains(ip):
			if r := destinationRefusal(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
				return r + " (inside a NAT64 address)"
			}
			return ""
		case sixToFour.Contains(ip):
			if r := destinationRefusal(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
				return r + " (inside a 6to4 address)"
			}
			return ""
		case ip.IsUnspecified():
		case ip.IsLoopback():
		case v4Compatible.Contains(ip):
			return "destination is an IPv4-compatible address (::/96, deprecated)"
		case siitPrefix.Contains(ip):
			return "destination is an IPv4-translated address (::ffff:0:0:0/96, SIIT)"
		case siteLocal.Contains(ip):
			return "destination is a site-local address (fec0::/10, deprecated)"
		}
	}
	switch {
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
	if r, ok := specialRangeOf(ip); ok {
		if r.global != reachYes {
			return "destination is in " + r.prefix.String() + " (" + r.name + ", " + r.rfc + "), which is not globally reachable"
		}
		return ""
	}
	if ip.Is6() && !globalUnicast.Contains(ip) {
		return "destination is outside the IPv6 global unicast space (2000::/3)"
	}
	return ""
}

// ErrLoop is inside the *failure.PolicyError refusing the daemon's own
// listener: a request through it would come straight back in, and again,
// until something gave out.
var ErrLoop = errors.New("destination is this daemon itself")

// refusal says why the dialer will not connect to ap: the daemon's own
// listeners always (even with --allow-private), the rest of the policy
// unless allowPrivate. The host's own interface addresses count as
// private: a service bound to 0.0.0.0 answers on them.
func (d *Dialer) refusal(ap netip.AddrPort) error {
	if ap.Addr().Zone() != "" {
		return &failure.PolicyError{Reason: "destination has an IPv6 zone"}
	}
	if d.own != nil && d.own.isListener(ap) {
		return &failure.PolicyError{Reason: ErrLoop.Error(), Err: ErrLoop}
	}
	if d.allowPrivate {
		return nil
	}
	if reason := destinationRefusal(ap.Addr()); reason != "" {
		return &failure.PolicyError{Reason: reason}
	}
	if d.own != nil && d.own.Has(ap.Addr()) {
		return &failure.PolicyError{Reason: "destination is an address of this host"}
	}
	return nil
}

// control is a net.Dialer.Control that enforces the destination policy.
// The address it sees is always an IP literal with a port.
func (d *Dialer) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &failure.PolicyError{Reason: "destination address is not an IP address"}
	}
	return d.refusal(ap)
}

// ErrZone is Precheck's refusal of a destination with an IPv6 zone: the
// caller's mistake, answered as bad input rather than as the policy's.
var ErrZone = errors.New("an IPv6 zone is not accepted in a destination")

// Precheck refuses, before the guard is asked, a URL host that the dialer
// would refuse whatever DNS says: an IP literal, a zone (ErrZone), a
// localhost name. A refusal then leaves no record in the guard and counts
// as nothing. A name that resolves to a refused address is still refused
// at dial time. A port that is not a number passes: the transport answers
// it.
func (d *Dialer) Precheck(host, port string) error {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if strings.Contains(name, "%") {
		return ErrZone
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		name = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return nil
	}
	return d.refusal(netip.AddrPortFrom(ip, uint16(p)))
}

// Dialer is the one dialer for the daemon's upstream connections (the
// fetch route's and the proxy's transport, the proxy's CONNECT tunnels),
// so all of them enforce the same policy.
type Dialer struct {
	d            net.Dialer
	own          *OwnAddrs
	allowPrivate bool
	// dials counts DialContext calls. A name is resolved inside the call,
	// so none means no lookup either: the tests' proof that a fast-fail
	// touches no network.
	dials atomic.Int64
}

// NewDialer returns a Dialer that refuses the daemon's own listeners
// (own's), and, unless allowPrivate, every address the policy refuses and
// own's interface addresses. connectTimeout bounds each connect.
func NewDialer(allowPrivate bool, connectTimeout time.Duration, own *OwnAddrs) *Dialer {
	d := &Dialer{d: net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}, own: own, allowPrivate: allowPrivate}
	d.d.Control = d.control
	return d
}

// DialContext dials address, refusing what the policy refuses with a
// *failure.PolicyError before any packet is sent.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.dials.Add(1)
	return d.d.DialContext(ctx, network, address)
}

// Dials is how many times DialContext was called.
func (d *Dialer) Dials() int64 { return d.dials.Load() }
