package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/transport"
)

// parityFloor is the wait floor both sides of TestForwardingRulesParity
// run with: short, so that the table takes seconds, and above the
// shortest client timeout in it.
const parityFloor = 300 * time.Millisecond

// parityScenario is a sequence of requests, each with its client's
// timeout, to one endpoint, and what the guard must end up saying.
type parityScenario struct {
	name     string
	host     func(t *testing.T) (url string, accepted func() int64)
	timeouts []time.Duration
	outcomes string // one word per request: answer, timeout, failed, fast-fail
	state    string
	failures int
	accepted int64 // connections the host accepted; -1: not checked (pooling decides)
}

func parityScenarios() []parityScenario {
	silent := func(t *testing.T) (string, func() int64) {
		h := faulthost.NeverAnswers()
		t.Cleanup(h.Close)
		return h.URL(), func() int64 { return int64(h.Conns()) }
	}
	return []parityScenario{
		{
			name: "a silent host trips on the second give-up", host: silent,
			timeouts: []time.Duration{600 * time.Millisecond, 600 * time.Millisecond, 600 * time.Millisecond},
			outcomes: "timeout timeout fast-fail", state: "open", failures: 2, accepted: 2,
		},
		{
			name: "give-ups under the floor say nothing", host: silent,
			timeouts: []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond},
			outcomes: "timeout timeout timeout", state: "closed", failures: 0, accepted: 3,
		},
		{
			name: "a slow host is not charged for impatient clients",
			host: func(t *testing.T) (string, func() int64) {
				var n atomic.Int64
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					// The host's own pace, not synchronisation.
					select {
					case <-time.After(time.Second):
						fmt.Fprint(w, "slow")
					case <-r.Context().Done():
					}
				}))
				srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
					if s == http.StateNew {
						n.Add(1)
					}
				}
				srv.Start()
				t.Cleanup(srv.Close)
				return srv.URL, n.Load
			},
			timeouts: []time.Duration{5 * time.Second, 600 * time.Millisecond, 600 * time.Millisecond, 600 * time.Millisecond},
			outcomes: "answer timeout timeout timeout", state: "closed", failures: 0, accepted: -1,
		},
		{
			name: "a refusing port trips on the second refusal",
			host: func(t *testing.T) (string, func() int64) {
				h := faulthost.ClosedPort()
				return h.URL(), func() int64 { return 0 }
			},
			timeouts: []time.Duration{time.Second, time.Second, time.Second},
			outcomes: "failed failed fast-fail", state: "open", failures: 2, accepted: 0,
		},
		{
			name: "an answer is an answer",
			host: func(t *testing.T) (string, func() int64) {
				h := faulthost.Status(http.StatusBadGateway)
				t.Cleanup(h.Close)
				return h.URL(), func() int64 { return int64(h.Conns()) }
			},
			timeouts: []time.Duration{time.Second, time.Second},
			outcomes: "answer answer", state: "closed", failures: 0, accepted: -1,
		},
	}
}

// TestForwardingRulesParity runs one scenario set through a Go
// http.Client with the guarded transport and through the real proxy, and
// checks that the guard ends up saying the same, and the expected, thing
// about every endpoint: the library and the daemon follow one set of
// rules.
func TestForwardingRulesParity(t *testing.T) {
	t.Parallel()
	for _, sc := range parityScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			type result struct {
				side, outcomes, state string
				failures              int
				accepted              int64
			}
			results := make(chan result, 2)
			t.Run("sides", func(t *testing.T) {
				t.Run("transport", func(t *testing.T) {
					t.Parallel()
					u, accepted := sc.host(t)
					g := guard.New(guard.Config{WaitFloor: parityFloor, Disabled: func() bool { return false }})
					tr := transport.New(transport.Config{Guard: g, HeaderTimeout: 30 * time.Second})
					t.Cleanup(tr.CloseIdleConnections)
					var words []string
					for _, d := range sc.timeouts {
						resp, err := (&http.Client{Transport: tr, Timeout: d}).Get(u + "/x")
						words = append(words, libraryOutcome(resp, err))
					}
					st, n := guardSays(g, u)
					results <- result{"transport", strings.Join(words, " "), st, n, accepted()}
				})
				t.Run("proxy", func(t *testing.T) {
					t.Parallel()
					f := setup(t, func(c *Config) {
						c.HeaderTimeout = 30 * time.Second
						c.Guard.WaitFloor = parityFloor
					})
					u, accepted := sc.host(t)
					pu, _ := url.Parse("http://" + f.proxy)
					tr := &http.Transport{Proxy: http.ProxyURL(pu)}
					t.Cleanup(tr.CloseIdleConnections)
					var words []string
					key, _ := guard.Key(u)
					for _, d := range sc.timeouts {
						resp, err := (&http.Client{Transport: tr, Timeout: d}).Get(u + "/x")
						words = append(words, proxyOutcome(resp, err))
						// The daemon learns of a give-up when the client's
						// connection closes: wait for the ticket to settle.
						settled(t, f.s.guard, key)
					}
					st, n := guardSays(f.s.guard, u)
					results <- result{"proxy", strings.Join(words, " "), st, n, accepted()}
				})
			})
			close(results)
			var got []result
			for r := range results {
				got = append(got, r)
				if r.outcomes != sc.outcomes || r.state != sc.state || r.failures != sc.failures || (sc.accepted >= 0 && r.accepted != sc.accepted) {
					t.Errorf("%s: %q, %s with %d failures, %d accepted; want %q, %s with %d, %d accepted",
						r.side, r.outcomes, r.state, r.failures, r.accepted, sc.outcomes, sc.state, sc.failures, sc.accepted)
				}
			}
			if len(got) == 2 && (got[0].outcomes != got[1].outcomes || got[0].state != got[1].state || got[0].failures != got[1].failures) {
				t.Errorf("the sides differ: %+v and %+v", got[0], got[1])
			}
		})
	}
}

func libraryOutcome(resp *http.Response, err error) string {
	var ne net.Error
	switch {
	case err == nil:
		resp.Body.Close()
		return "answer"
	case errors.Is(err, guard.ErrOpen):
		return "fast-fail"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "failed"
}

func proxyOutcome(resp *http.Response, err error) string {
	var ne net.Error
	switch {
	case err != nil && errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case err != nil:
		return "failed"
	}
	resp.Body.Close()
	ps := resp.Header.Get("Proxy-Status")
	switch {
	case strings.HasPrefix(ps, "hostguard; error=destination_unavailable"):
		return "fast-fail"
	case strings.HasPrefix(ps, "hostguard;"):
		return "failed"
	}
	return "answer"
}

// guardSays is what g holds about the endpoint of u.
func guardSays(g *guard.Guard, u string) (state string, failures int) {
	key, _ := guard.Key(u)
	for _, e := range g.Endpoints() {
		if e.Endpoint == key {
			return e.State.String(), e.Failures
		}
	}
	return g.State(u).String(), 0
}

// settled waits until no ticket for key is out.
func settled(t *testing.T, g *guard.Guard, key string) {
	t.Helper()
	waitfor.True(t, 10*time.Second, "the tickets of "+key+" to settle", func() bool {
		for _, e := range g.Endpoints() {
			if e.Endpoint == key {
				return e.TicketsOut == 0
			}
		}
		return true
	})
}

// TestTinyTimeoutHintTripsNothing: a client may ask for any header
// timeout, but a wait it chose shorter than the floor says nothing about
// the host; sent again and again, over the proxy and fetch, a 1 µs hint
// leaves a healthy endpoint closed for every client.
func TestTinyTimeoutHintTripsNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	up := faulthost.Status(http.StatusOK)
	t.Cleanup(up.Close)
	pu, _ := url.Parse("http://" + f.proxy)
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	t.Cleanup(tr.CloseIdleConnections)
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, up.URL()+"/x", nil)
		req.Header.Set("Hostguard-Timeout", "0.000001")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("a 1 µs hint got %d; want 504, its own timeout", resp.StatusCode)
		}
		if a := f.do("GET", "/v1/fetch?timeout=0.000001&url="+url.QueryEscape(up.URL()+"/y"), nil); a.status != http.StatusGatewayTimeout {
			t.Fatalf("fetch with a 1 µs timeout got %d; want 504", a.status)
		}
	}
	if st, n := guardSays(f.s.guard, up.URL()); st != "closed" || n != 0 {
		t.Fatalf("after six 1 µs hints the endpoint is %s with %d failures; want closed with none", st, n)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(up.URL() + "/z")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a plain request after the hints got %d; want the host's 200", resp.StatusCode)
	}
}
