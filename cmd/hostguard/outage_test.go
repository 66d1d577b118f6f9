package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestStoreOutage takes the daemon's PostgreSQL schema away under it (a
// rename: every query fails as it would with the store gone) and brings
// it back.
func TestStoreOutage(t *testing.T) {
	bin := buildBinary(t)
	dsn := storetest.PostgresDSN(t)
	u, _ := url.Parse(dsn)
	schema := u.Query().Get("search_path")
	d := start(t, bin, dsn)
	ready := func() int {
		status, _ := d.send(t, "GET", "/readyz", "")
		return status
	}
	waitfor.True(t, 10*time.Second, "the daemon is ready", func() bool { return ready() == 200 })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := *u
	q := base.Query()
	q.Del("search_path")
	base.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, base.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER SCHEMA "+schema+" RENAME TO "+schema+"_away"); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if _, err := conn.Exec(ctx, "ALTER SCHEMA "+schema+"_away RENAME TO "+schema); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer restore()

	const n = 40
	for i := range n {
		req, _ := http.NewRequest("POST", d.api+"/v1/items", strings.NewReader(`{"items":[{"id":"o"}]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(resp.Header.Get("Proxy-Status"), "proxy_internal_error") {
			t.Fatalf("request %d during the outage: %d %v", i, resp.StatusCode, resp.Header)
		}
	}
	if status := ready(); status != 503 {
		t.Fatalf("/readyz during the outage: %d", status)
	}
	if status, _ := d.send(t, "GET", "/healthz", ""); status != 200 {
		t.Fatalf("/healthz during the outage: %d", status)
	}
	if lines := strings.Count(d.logs.String(), `"msg":"server: adding items failed"`); lines < 1 || lines > 2 {
		t.Fatalf("%d failed requests logged %d lines, want 1 or 2:\n%s", n, lines, d.logs.String())
	}

	restore()
	waitfor.True(t, 10*time.Second, "ready again", func() bool { return ready() == 200 })
	d.call(t, "POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "o"}}}, 200, nil)
}
