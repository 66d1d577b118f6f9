package retry

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// wakeStore records the wake it is asked for.
type wakeStore struct {
	nopStore
	got []retrydriver.WakeHostParams
}

func (w *wakeStore) RetryWakeHost(_ context.Context, p retrydriver.WakeHostParams) (retrydriver.WakeHostResult, error) {
	w.got = append(w.got, p)
	return retrydriver.WakeHostResult{Woken: 3}, nil
}

// TestWakeHostAsksTheStore is a step table of what WakeHost asks the
// store for: the host as stored, the host-level classes (failure's and
// the configured ones), the jitter as the spread, and nothing for a bad
// host.
func TestWakeHostAsksTheStore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		name   string
		cfg    Config
		host   string
		want   string
		spread time.Duration
		extra  []string
		err    bool
	}{
		{"default jitter", Config{}, "Example.COM", "example.com", DefaultWakeJitter, nil, false},
		{"jitter off", Config{WakeJitter: -1}, "example.com.", "example.com", 0, nil, false},
		{"own jitter, own class", Config{WakeJitter: 5 * time.Second,
			Classes: map[string]ClassConfig{"hoster_down": {Ladder: Ladder{time.Hour}, Host: true}, "no_peers": {Ladder: Ladder{time.Hour}}}},
			"[2001:DB8::1]", "2001:db8::1", 5 * time.Second, []string{"hoster_down"}, false},
		{"userinfo", Config{}, "user:secret@example.com", "", 0, nil, true},
		{"a port", Config{}, "example.com:443", "", 0, nil, true},
		{"a URL", Config{}, "https://example.com", "", 0, nil, true},
		{"empty", Config{}, "", "", 0, nil, true},
	}
	hostLevel := []string{"aborted", "dns_not_found", "dns_temporary", "host_unreachable", "network_unreachable", "refused", "timeout"}
	for _, st := range steps {
		store := &wakeStore{}
		st.cfg.Now = func() time.Time { return t0 }
		s, err := New(store, st.cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.WakeHost(context.Background(), st.host)
		if st.err {
			if !errors.Is(err, ErrInvalid) || len(store.got) != 0 {
				t.Errorf("%s: err %v, store asked %d times; want ErrInvalid and no store call", st.name, err, len(store.got))
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error repeats the credential: %v", st.name, err)
			}
			continue
		}
		if err != nil || res.Woken != 3 || res.Host != st.want || len(store.got) != 1 {
			t.Fatalf("%s: %+v, %v, %d calls", st.name, res, err, len(store.got))
		}
		p := store.got[0]
		classes := slices.Sorted(slices.Values(append(slices.Clone(hostLevel), st.extra...)))
		if p.Host != st.want || p.Spread != st.spread || !p.Now.Equal(t0) || !slices.Equal(p.Classes, classes) {
			t.Errorf("%s: store asked %+v; want host %s, spread %v, classes %v", st.name, p, st.want, st.spread, classes)
		}
		for _, c := range p.Classes {
			if !s.IsHostClass(c) {
				t.Errorf("%s: %s is sent as host-level but IsHostClass says no", st.name, c)
			}
		}
		if s.IsHostClass("no_peers") || s.IsHostClass(ClassLeaseExpired) || s.IsHostClass("reset") {
			t.Errorf("%s: an item-level class counts as host-level", st.name)
		}
	}
}

// TestFailNamesTheHost: a failure's host replaces the item's, an empty one
// keeps it, and neither touches the ladder's count.
func TestFailNamesTheHost(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := New(nopStore{}, Config{Jitter: -1, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.Repeat("7", tokenLen)
	steps := []struct {
		host, want string
	}{
		{"", "old.example"},
		{"new.example", "new.example"},
		{"", "new.example"},
	}
	for i, st := range steps {
		r := &retrydriver.Record{ID: "x", State: retrydriver.Leased, LeaseGen: int64(i + 1), LeaseKey: tok, Host: "old.example", Failures: i}
		if i > 0 {
			r.Host = steps[i-1].want
		}
		if _, err := s.applyOutcome(r, Outcome{Op: OpFail, Class: "timeout", Host: st.host}, tok, t0); err != nil {
			t.Fatal(err)
		}
		if r.Host != st.want || r.Failures != i+1 {
			t.Fatalf("step %d: host %q failures %d; want %q, %d", i, r.Host, r.Failures, st.want, i+1)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	good := map[string]string{
		"Example.COM":            "example.com",
		"example.com.":           "example.com",
		"192.0.2.7":              "192.0.2.7",
		"[2001:DB8::1]":          "2001:db8::1",
		"2001:db8:0:0::1":        "2001:db8::1",
		"xn--bcher-kva.example":  "xn--bcher-kva.example",
		"_srv.under_score.local": "_srv.under_score.local",
	}
	for in, want := range good {
		if got, err := NormalizeHost(in); err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"user:pw@example.com":    "userinfo",
		"example.com/path":       "path",
		"http://example.com":     "path",
		"example.com:8080":       "port",
		"example.com?q=1":        "query",
		"example.com#f":          "fragment",
		"ex%41mple.com":          "encoded",
		"exa mple.com":           "letters",
		"bücher.example":         "letters",
		"a..b":                   "empty label",
		".":                      "not a host name",
		"fe80::1%eth0":           "encoded",
		"a\x07b":                 "control",
		strings.Repeat("a", 300): "more than",
	}
	for in, want := range bad {
		_, err := NormalizeHost(in)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != "host" || !strings.Contains(ie.Reason, want) {
			t.Errorf("NormalizeHost(%q) = %v; want an InputError for host saying %q", in, err, want)
		}
	}
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "[::1]", "user@host", "a:b", "192.0.2.1", "xn--x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		h, err := NormalizeHost(in)
		if err != nil || h == "" {
			return
		}
		// What is stored normalises to itself, and is a bare host.
		if again, err := NormalizeHost(h); err != nil || again != h {
			t.Fatalf("NormalizeHost(%q) = %q, but again %q, %v", in, h, again, err)
		}
		if strings.ContainsAny(h, "@/?#% []") || len(h) > MaxHostBytes {
			t.Fatalf("NormalizeHost(%q) = %q, not a bare host", in, h)
		}
		if strings.Contains(h, ":") {
			if a, err := netip.ParseAddr(h); err != nil || !a.Is6() {
				t.Fatalf("NormalizeHost(%q) = %q: a colon outside an IPv6 address", in, h)
			}
		}
	})
}
