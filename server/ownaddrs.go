package server

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// ownAddrRefresh is how stale the host's address list may get. Interfaces
// change rarely (a DHCP lease, a VPN coming up); reading them is one
// system call, so a lazy re-read on use is cheaper than watching for
// changes and close enough to "on change".
const ownAddrRefresh = 2 * time.Second

// ownAddrs is the set of addresses of the host's own interfaces, and of
// the daemon's own listeners. The destination policy refuses the first
// (a service bound to 0.0.0.0 is reachable on them, loopback or not) and
// the Host check accepts them when the API listens on every interface.
type ownAddrs struct {
	mu      sync.Mutex
	read    time.Time
	addrs   map[netip.Addr]bool
	listens []netip.AddrPort // the daemon's own listeners, set by Serve
	now     func() time.Time
	list    func() ([]net.Addr, error) // net.InterfaceAddrs; a seam for tests
}

func newOwnAddrs(now func() time.Time) *ownAddrs {
	o := &ownAddrs{now: now, list: net.InterfaceAddrs}
	o.refresh()
	return o
}

func (o *ownAddrs) refresh() {
	addrs := map[netip.Addr]bool{}
	if list, err := o.list(); err == nil {
		for _, a := range list {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				addrs[p.Addr().Unmap()] = true
			}
		}
	}
	o.addrs = addrs
	o.read = o.now()
}

// has reports whether ip is one of the host's interface addresses.
func (o *ownAddrs) has(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.now().Sub(o.read) >= ownAddrRefresh || o.now().Before(o.read) {
		o.refresh()
	}
	return o.addrs[ip]
}

// setListens records the daemon's own listening addresses.
func (o *ownAddrs) setListens(addrs ...net.Addr) {
	var aps []netip.AddrPort
	for _, a := range addrs {
		if a == nil {
			continue
		}
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			aps = append(aps, netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port()))
		}
	}
	o.mu.Lock()
	o.listens = aps
	o.mu.Unlock()
}

func (o *ownAddrs) listening() []netip.AddrPort {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.listens
}

// isListener reports whether ap reaches one of the daemon's own listeners:
// the address itself, or any loopback or interface address on the port of
// a listener bound to every interface.
func (o *ownAddrs) isListener(ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap().WithZone("")
	for _, l := range o.listening() {
		if l.Port() != ap.Port() {
			continue
		}
		if l.Addr() == ip || (l.Addr().IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified() || o.has(ip))) {
			return true
		}
		// Linux connects 0.0.0.0 and :: to the loopback interface.
		if l.Addr().IsLoopback() && ip.IsUnspecified() {
			return true
		}
	}
	return false
}
