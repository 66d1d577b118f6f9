package netpolicy

import (
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/clocktest"
	"github.com/hostguard/hostguard/internal/logtest"
)

// fakeInterfaces is the list seam of OwnAddrs: the addresses it returns
// and how often it was read.
type fakeInterfaces struct {
	mu    sync.Mutex
	addrs []string
	reads int
}

func (f *fakeInterfaces) set(addrs ...string) {
	f.mu.Lock()
	f.addrs = addrs
	f.mu.Unlock()
}

func (f *fakeInterfaces) list() ([]net.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []net.Addr
	for _, a := range f.addrs {
		p := netip.MustParsePrefix(a)
		out = append(out, &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
	}
	return out, nil
}

func TestOwnAddrsReadOnChangeWhenWatched(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ifs := &fakeInterfaces{}
	ifs.set("192.0.2.10/24")
	o := &OwnAddrs{now: clock.Now, list: ifs.list}
	o.refresh()
	a, b := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("198.51.100.7")

	// Unwatched: a change shows once ownAddrRefresh has passed.
	ifs.set("198.51.100.7/24")
	if !o.Has(a) || o.Has(b) {
		t.Fatal("the list was re-read before ownAddrRefresh")
	}
	clock.Advance(ownAddrRefresh)
	if o.Has(a) || !o.Has(b) {
		t.Fatal("the list was not re-read after ownAddrRefresh")
	}

	// Watched: only a change (or the backstop) re-reads it.
	o.mu.Lock()
	o.watching = true
	o.mu.Unlock()
	ifs.set("192.0.2.10/24")
	clock.Advance(10 * ownAddrRefresh)
	if o.Has(a) || !o.Has(b) {
		t.Fatal("a watched list was re-read by the clock alone")
	}
	o.noteChange()
	if !o.Has(a) || o.Has(b) {
		t.Fatal("a watched list was not re-read after a change")
	}
	reads := ifs.reads
	for range 100 {
		o.Has(a)
	}
	if ifs.reads != reads {
		t.Fatalf("%d reads without a change", ifs.reads-reads)
	}
	ifs.set("198.51.100.7/24")
	clock.Advance(ownAddrBackstop)
	if o.Has(a) || !o.Has(b) {
		t.Fatal("a watched list was not re-read at the backstop")
	}
}

// TestOwnAddrsWatcherStops subscribes to the kernel's address changes
// where it can and stops the watcher again; goleak in TestMain checks it
// left nothing behind. Where netlink is refused, the fallback is logged
// once and the timed re-read stays.
func TestOwnAddrsWatcherStops(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	o := NewOwnAddrs(time.Now)
	stop := o.Watch(slog.New(slog.NewTextHandler(logs, nil)))
	o.mu.Lock()
	watching := o.watching
	o.mu.Unlock()
	t.Logf("watching address changes: %v", watching)
	if runtime.GOOS != "linux" && watching {
		t.Fatal("watching outside Linux")
	}
	if !watching {
		if n := strings.Count(logs.String(), "not watched"); n != 1 {
			t.Fatalf("fallback logged %d times, want once:\n%s", n, logs.String())
		}
	}
	done := make(chan struct{})
	go func() {
		stop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not stop")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watching {
		t.Fatal("still marked as watching after stop")
	}
}
