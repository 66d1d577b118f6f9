package retry

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/internal/inputtext"
	"github.com/hostguard/hostguard/retry/retrydriver"
)

// MaxHostBytes is the longest host name an item may name: the longest DNS
// name.
const MaxHostBytes = 253

// NormalizeHost returns the form in which an item's host is stored and
// matched: lower case, without a trailing dot, an IPv6 address without
// brackets and in its canonical spelling. Empty means no host and stays
// empty.
//
// A host is a name (ASCII letters, digits, '-', '_' and '.'; an
// internationalised name in its xn-- form) or an IP address, never a URL
// or part of one: an '@' (userinfo, which may hold a credential), a '/'
// (a scheme or a path), a ':' outside an IPv6 address (a port), a '?', a
// '#' or a '%' is an *InputError with Field "host" that does not repeat
// the value, so that a credential pasted into the field is never logged.
func NormalizeHost(host string) (string, error) {
	if host == "" {
		return "", nil
	}
	if len(host) > MaxHostBytes+2 { // room for brackets or a trailing dot
		return "", invalid("host", "is %d bytes, more than %d", len(host), MaxHostBytes)
	}
	if err := inputtext.Check(host); err != nil {
		return "", invalid("host", "%v", err)
	}
	switch i := strings.IndexAny(host, "@/?#%"); {
	case i < 0:
	case host[i] == '@':
		return "", invalid("host", "contains '@' (userinfo); give the host name alone")
	case host[i] == '/':
		return "", invalid("host", "contains '/' (a URL or a path); give the host name alone")
	case host[i] == '?':
		return "", invalid("host", "contains '?' (a query); give the host name alone")
	case host[i] == '#':
		return "", invalid("host", "contains '#' (a fragment); give the host name alone")
	default:
		return "", invalid("host", "contains '%%' (an encoded character); give the host name as it is")
	}
	if strings.ContainsRune(host, ':') {
		a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", invalid("host", "contains ':' (a port); give the host name alone")
		}
		return a.String(), nil
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "" || len(h) > MaxHostBytes {
		return "", invalid("host", "is not a host name")
	}
	for _, c := range []byte(h) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", invalid("host", "contains %q; a host name is letters, digits, '-', '_' and '.'", rune(c))
		}
	}
	if strings.Contains(h, "..") || h[0] == '.' || h[len(h)-1] == '.' {
		return "", invalid("host", "has an empty label")
	}
	return h, nil
}

// IsHostClass reports whether a failure of class says that the item's
// host did not answer, so that the host answering again ends the wait
// (WakeHost): the host-level classes of package failure — timeout,
// dns_not_found, dns_temporary, refused, host_unreachable,
// network_unreachable and aborted (failure.Class.HostLevel) — and every
// class given Host in Config.Classes. Other classes (a 404, a hash
// mismatch, no peers, lease_expired) are about the item, not its host:
// they keep their wait.
func (s *Scheduler) IsHostClass(class string) bool {
	if cc, ok := s.cfg.Classes[class]; ok && cc.Host {
		return true
	}
	return failure.Class(class).HostLevel()
}

// hostClasses lists the host-level classes in byte order, for the store.
func (s *Scheduler) hostClasses() []string {
	set := map[string]bool{}
	for _, c := range failure.Classes() {
		if c.HostLevel() {
			set[string(c)] = true
		}
	}
	for class, cc := range s.cfg.Classes {
		if cc.Host {
			set[class] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// WakeResult says what WakeHost did.
type WakeResult struct {
	// Host is the host as stored (NormalizeHost).
	Host string `json:"host"`
	// Woken counts the items made due.
	Woken int `json:"woken"`
}

// WakeHost is told that host answered again. Every item of that host
// (NewItem.Host, Outcome.Host) that is scheduled after a failure of a
// host-level class (IsHostClass) and not due within Config.WakeJitter
// becomes due within it: at a random point between now and now plus the
// jitter, drawn per item, so that a host that had thousands of items
// parked is not hit by all of them at once. Nothing else about the items
// changes: their failures in a row, history and class stay, so the next
// failure still takes the next step of the ladder. Items waiting out any
// other class, items of other hosts, and pending, leased and done items
// are left alone.
//
// The store finds the items through an index over items with a host, then
// wakes waiting claims as any other write does (on every node, on
// PostgreSQL), in short transactions of a few hundred (SQLite, whose one
// writer every claim needs too) or a few thousand items (PostgreSQL), so
// that claims go on during a large wake. PostgreSQL returns after its
// first transaction, whose items are due first, and moves the rest in
// the background, well before the spread makes them due; what is left is
// stored with the first, and any node finishes it if this one stops. Calling it again for
// the same recovery finds nothing to do: the items it woke are due within
// the jitter already. A host that is not a valid host name is an
// *InputError and changes nothing.
func (s *Scheduler) WakeHost(ctx context.Context, host string) (WakeResult, error) {
	h, err := NormalizeHost(host)
	if err != nil {
		return WakeResult{}, err
	}
	if h == "" {
		return WakeResult{}, invalid("host", "is empty")
	}
	res, err := s.store.RetryWakeHost(ctx, retrydriver.WakeHostParams{
		Now:     s.now(),
		Host:    h,
		Classes: s.hostClasses(),
		Spread:  s.cfg.WakeJitter,
	})
	if err != nil {
		return WakeResult{}, err
	}
	return WakeResult{Host: h, Woken: res.Woken}, nil
}
