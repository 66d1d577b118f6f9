package netpolicy

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// ownAddrRefresh is how stale the host's address list may get where the
// kernel does not tell the daemon about changes (not Linux, or netlink
// refused, as in some containers): reading the interfaces is one system
// call, so a lazy re-read on use is cheap.
const ownAddrRefresh = 2 * time.Second

// ownAddrBackstop is how stale the list may get while changes are
// watched: a netlink socket whose buffer overflowed loses events, so the
// list is re-read now and then even without one.
const ownAddrBackstop = time.Minute

// OwnAddrs is the set of addresses of the host's own interfaces, and of
// the daemon's own listeners. The destination policy refuses the first
// (a service bound to 0.0.0.0 is reachable on them, loopback or not) and
// the Host check accepts them when the API listens on every interface.
type OwnAddrs struct {
	mu       sync.Mutex
	read     time.Time
	addrs    map[netip.Addr]bool
	listens  []netip.AddrPort // the daemon's own listeners, set by Serve
	watching bool             // a watcher marks changes; see watch
	changed  bool             // the watcher saw a change since the last read
	now      func() time.Time
	list     func() ([]net.Addr, error) // net.InterfaceAddrs; a seam for tests
}

// NewOwnAddrs reads the interface addresses; now is the clock their re-read
// goes by.
func NewOwnAddrs(now func() time.Time) *OwnAddrs {
	o := &OwnAddrs{now: now, list: net.InterfaceAddrs}
	o.refresh()
	return o
}

func (o *OwnAddrs) refresh() {
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
	o.changed = false
}

// Watch subscribes to the kernel's address changes where it can (see
// watchAddrChanges), so that the list is re-read on a change rather than
// every ownAddrRefresh. Where it cannot, it logs why once and the timed
// re-read stays. The returned stop ends the watcher and waits for it.
func (o *OwnAddrs) Watch(log *slog.Logger) (stop func()) {
	unsubscribe, err := watchAddrChanges(o.noteChange)
	if err != nil {
		log.Info("server: interface address changes are not watched; re-reading them on use every "+ownAddrRefresh.String(), "reason", err)
		return func() {}
	}
	o.mu.Lock()
	o.watching = true
	// Whatever changed before the subscription is read on next use.
	o.changed = true
	o.mu.Unlock()
	return func() {
		unsubscribe()
		o.mu.Lock()
		o.watching = false
		o.mu.Unlock()
	}
}

// noteChange is the watcher's callback: the next use re-reads.
func (o *OwnAddrs) noteChange() {
	o.mu.Lock()
	o.changed = true
	o.mu.Unlock()
}

// Has reports whether ip is one of the host's interface addresses.
func (o *OwnAddrs) Has(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	o.mu.Lock()
	defer o.mu.Unlock()
	every := ownAddrRefresh
	if o.watching {
		every = ownAddrBackstop
	}
	if o.changed || o.now().Sub(o.read) >= every || o.now().Before(o.read) {
		o.refresh()
	}
	return o.addrs[ip]
}

// SetListens records the daemon's own listening addresses, which the
// dialer refuses whatever the policy allows.
func (o *OwnAddrs) SetListens(addrs ...net.Addr) {
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

// Listening is what SetListens recorded.
func (o *OwnAddrs) Listening() []netip.AddrPort {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.listens
}

// isListener reports whether ap reaches one of the daemon's own listeners:
// the address itself, or any loopback or interface address on the port of
// a listener bound to every interface.
func (o *OwnAddrs) isListener(ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap().WithZone("")
	for _, l := range o.Listening() {
		if l.Port() != ap.Port() {
			continue
		}
		if l.Addr() == ip || (l.Addr().IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified() || o.Has(ip))) {
			return true
		}
		// Linux connects 0.0.0.0 and :: to the loopback interface.
		if l.Addr().IsLoopback() && ip.IsUnspecified() {
			return true
		}
	}
	return false
}
