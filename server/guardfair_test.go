package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// fairClient is a keep-alive API client whose connections come from one
// loopback address, so the daemon sees it as one client.
type fairClient struct {
	t   *testing.T
	api string
	c   *http.Client
}

func newFairClient(t *testing.T, api, from string) *fairClient {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	tr := &http.Transport{Proxy: nil, DialContext: d.DialContext, MaxIdleConnsPerHost: 8}
	t.Cleanup(tr.CloseIdleConnections)
	return &fairClient{t: t, api: api, c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// post sends body as JSON and decodes the JSON answer into a map.
func (c *fairClient) post(ctx context.Context, path string, body any) (int, http.Header, map[string]any, error) {
	enc, err := json.Marshal(body)
	if err != nil {
		return 0, nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.api+path, bytes.NewReader(enc))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return resp.StatusCode, resp.Header, nil, fmt.Errorf("answer %d is not JSON: %q", resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, m, nil
}

// TestGuardDeadHostTripsWhileAnotherClientPinsEveryRecord is the fairness
// case of the guard: one client holds tickets on 10 000 distinct endpoints
// and never reports them, more than the guard keeps records for; another
// client's dead host still trips after its two failures, and fast-fails.
func TestGuardDeadHostTripsWhileAnotherClientPinsEveryRecord(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.Guard.MaxProbes = -1 })
	const pinned = 10_000
	if pinned <= guard.DefaultMaxEndpoints {
		t.Fatal("the pinning client must hold more endpoints than the guard keeps records")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The pinning client, from 127.0.0.1, over a few connections.
	hog := newFairClient(t, f.api, "127.0.0.1")
	tickets := make([]string, pinned)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			for i := w; i < pinned; i += workers {
				status, _, m, err := hog.post(ctx, "/v1/guard/acquire", map[string]any{"url": fmt.Sprintf("http://pin%d.example/", i)})
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("acquire %d: status %d: %v", i, status, m)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				tickets[i], _ = m["ticket"].(string)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if n := f.s.tickets.len(); n != pinned {
		t.Fatalf("%d tickets held, want %d", n, pinned)
	}
	// Near the cap the guard's door lets first sightings through on no
	// record, so it fills to within one eviction batch of it.
	if n := f.s.guard.Len(); n > guard.DefaultMaxEndpoints || n < guard.DefaultMaxEndpoints*15/16 {
		t.Fatalf("the guard holds %d records, want its cap of %d or all but a sixteenth of it", n, guard.DefaultMaxEndpoints)
	}
	for _, st := range f.s.guard.Endpoints() {
		if st.TicketsOut == 0 {
			t.Fatalf("%s holds no ticket, want every record pinned", st.Endpoint)
		}
	}

	// A host that refuses connections, as a dead one does.
	ln := listen(t)
	dead := "http://" + ln.Addr().String()
	ln.Close()
	victim := newFairClient(t, f.api, "127.0.0.2")
	fail := func() {
		t.Helper()
		status, _, m, err := victim.post(ctx, "/v1/guard/acquire", map[string]any{"url": dead + "/health"})
		if err != nil || status != http.StatusOK {
			t.Fatalf("victim acquire: %d %v %v", status, m, err)
		}
		conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err == nil {
			conn.Close()
			t.Fatal("the dead host accepted a connection")
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dialling the dead host: %v, want connection refused", err)
		}
		status, _, m, err = victim.post(ctx, "/v1/guard/report", map[string]any{"ticket": m["ticket"], "outcome": "failed", "error_class": "refused"})
		if err != nil || status != http.StatusOK {
			t.Fatalf("victim report: %d %v %v", status, m, err)
		}
	}

	// Once the pinning tickets are stale, the dead host gets a record.
	f.clock.Advance(guard.StaleAfter + time.Second)
	fail()
	fail()
	status, hdr, m, err := victim.post(ctx, "/v1/guard/acquire", map[string]any{"url": dead + "/health"})
	if err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("acquire after two failures: %d %v %v; want a 503 fast-fail", status, m, err)
	}
	if hdr.Get("Retry-After") != "30" || m["endpoint"] != dead {
		t.Fatalf("fast-fail: Retry-After %q, body %v", hdr.Get("Retry-After"), m)
	}
	if n := f.s.guard.Len(); n > guard.DefaultMaxEndpoints {
		t.Fatalf("the guard holds %d records, above its cap", n)
	}

	// The pinning client's late reports are answered and change nothing
	// for the dead host, whichever of its records were reclaimed.
	for i := range 200 {
		status, _, m, err := hog.post(ctx, "/v1/guard/report", map[string]any{"ticket": tickets[i], "outcome": "answered"})
		if err != nil || status != http.StatusOK {
			t.Fatalf("late report %d: %d %v %v", i, status, m, err)
		}
	}
	list := f.do("GET", "/v1/guard?state=open", nil).json(t)
	eps, _ := list["endpoints"].([]any)
	if len(eps) != 1 || eps[0].(map[string]any)["endpoint"] != dead {
		t.Fatalf("open endpoints %v, want the dead host alone", list)
	}
	if st := f.s.guard.State(dead); st != guard.Open {
		t.Fatalf("the dead host is %v after the late reports, want open", st)
	}
}
