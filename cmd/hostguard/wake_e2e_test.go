package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/store/storetest"
)

// TestParkedItemWakesWithItsHost runs the real binary: an item naming its
// host fails with a host-level class and is parked for half an hour; a
// blocking claim waits; the host is touched successfully; the claim
// receives the item within the wake jitter. On PostgreSQL the touch goes
// to one node and the claim waits on another.
func TestParkedItemWakesWithItsHost(t *testing.T) {
	bin := buildBinary(t)
	const jitter = 300 * time.Millisecond
	for _, engine := range []string{"sqlite", "postgresql"} {
		t.Run(engine, func(t *testing.T) {
			var toucher, claimer *daemonProc
			args := []string{"--retry-wake-jitter", jitter.String()}
			if engine == "sqlite" {
				toucher = start(t, bin, filepath.Join(t.TempDir(), "wake.db"), args...)
				claimer = toucher
			} else {
				dsn := storetest.PostgresDSN(t)
				toucher = start(t, bin, dsn, args...)
				claimer = start(t, bin, dsn, args...)
			}
			toucher.call(t, "POST", "/v1/items", map[string]any{"items": []any{
				map[string]any{"id": "parked", "host": "Tracker.Example"},
				map[string]any{"id": "item-level", "host": "tracker.example"},
			}}, 200, nil)
			var claimed struct{ Leases []leaseOut }
			toucher.call(t, "POST", "/v1/items/claim", map[string]any{"n": 2, "lease_seconds": 60}, 200, &claimed)
			if len(claimed.Leases) != 2 {
				t.Fatalf("claimed %+v", claimed)
			}
			for _, l := range claimed.Leases {
				class := "timeout"
				if l.ID == "item-level" {
					class = "no_peers"
				}
				var it struct {
					NextAt time.Time `json:"next_at"`
					Host   string    `json:"host"`
				}
				toucher.call(t, "POST", "/v1/items/"+l.ID+"/fail", map[string]any{"lease": l.Lease, "class": class}, 200, &it)
				if it.Host != "tracker.example" || time.Until(it.NextAt) < 20*time.Minute {
					t.Fatalf("%s after its failure: %+v; want parked for half an hour behind tracker.example", l.ID, it)
				}
			}

			type result struct {
				leases []leaseOut
				at     time.Time
				err    error
			}
			got := make(chan result, 1)
			go func() {
				// Not claimer.call: a test may fail only on its own
				// goroutine.
				var out struct{ Leases []leaseOut }
				resp, err := plainClient.Post(claimer.api+"/v1/items/claim", "application/json",
					strings.NewReader(`{"n": 10, "lease_seconds": 60, "wait_seconds": 30}`))
				if err == nil {
					defer resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("claim: status %d", resp.StatusCode)
					} else {
						err = json.NewDecoder(resp.Body).Decode(&out)
					}
				}
				got <- result{out.Leases, time.Now(), err}
			}()
			// The claim is waiting once the daemon counts it among its
			// idle workers; touching before would prove less.
			waitIdle(t, claimer)
			touched := time.Now()
			toucher.call(t, "POST", "/v1/hosts/tracker.example/touch", map[string]any{"ok": true}, 200, nil)
			r := <-got
			if r.err != nil {
				t.Fatal(r.err)
			}
			if len(r.leases) != 1 || r.leases[0].ID != "parked" {
				t.Fatalf("the waiting claim received %+v; want the parked item only", r.leases)
			}
			// Within the jitter, plus what a shared machine adds to a
			// wake-up and a claim.
			if d := r.at.Sub(touched); d > jitter+5*time.Second {
				t.Fatalf("the claim received the item %v after the touch; want within the %v jitter", d, jitter)
			}
			t.Logf("%s: the waiting claim received the parked item %v after the touch", engine, r.at.Sub(touched))
		})
	}
}

// waitIdle waits until d reports a claim waiting for work.
func waitIdle(t *testing.T, d *daemonProc) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^hostguard_retry_waiting_claims ([1-9])`)
	waitfor.True(t, 10*time.Second, "the claim waits", func() bool {
		resp, err := plainClient.Get(d.api + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return re.Match(b)
	})
}

// plainClient talks to a daemon directly, never through a proxy from the
// environment, and keeps no connection open after a call.
var plainClient = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: time.Minute}

// TestLargeWakeOnPostgreSQL runs the real binary on PostgreSQL with more
// parked items of one host than a wake moves before it returns: the
// touch wakes all of them, the rest in the daemon's background, and
// every one is due within the jitter.
func TestLargeWakeOnPostgreSQL(t *testing.T) {
	bin := buildBinary(t)
	const n, jitter = 3000, 3 * time.Second
	d := start(t, bin, storetest.PostgresDSN(t), "--retry-wake-jitter", jitter.String())
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprintf("big-%04d", i), "host": "big.example"}
	}
	d.call(t, "POST", "/v1/items", map[string]any{"items": items}, 200, nil)
	for parked := 0; parked < n; {
		var claimed struct{ Leases []leaseOut }
		d.call(t, "POST", "/v1/items/claim", map[string]any{"n": 1000, "lease_seconds": 60}, 200, &claimed)
		if len(claimed.Leases) == 0 {
			t.Fatalf("parking: nothing to claim after %d", parked)
		}
		outcomes := make([]any, len(claimed.Leases))
		for i, l := range claimed.Leases {
			outcomes[i] = map[string]any{"id": l.ID, "lease": l.Lease, "op": "fail", "class": "timeout"}
		}
		d.call(t, "POST", "/v1/items/settle", map[string]any{"outcomes": outcomes}, 200, nil)
		parked += len(claimed.Leases)
	}
	type stats struct {
		DueNow    int `json:"due_now"`
		HostWoken int `json:"host_woken"`
	}
	var before stats
	d.call(t, "GET", "/v1/items/stats", nil, 200, &before)
	if before.DueNow != 0 {
		t.Fatalf("%d items due before the touch; want none", before.DueNow)
	}
	touched := time.Now()
	d.call(t, "POST", "/v1/hosts/big.example/touch", map[string]any{"ok": true}, 200, nil)
	var after stats
	waitfor.True(t, jitter+10*time.Second, "every parked item to be woken and due", func() bool {
		d.call(t, "GET", "/v1/items/stats", nil, 200, &after)
		return after.HostWoken-before.HostWoken == n && after.DueNow == n
	})
	t.Logf("all %d items due %v after the touch", n, time.Since(touched).Round(time.Millisecond))
}
