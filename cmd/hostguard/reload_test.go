package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/waitfor"
)

// TestReloadStoresNoOverride: a SIGHUP applies the file's new source
// values as configured values, so a restart with an edited file runs on
// that file and warns about no stored override.
func TestReloadStoresNoOverride(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "hostguard.json")
	db := filepath.Join(dir, "r.db")
	write := func(limit string) {
		body := `{"budget": {"sources": [{"name": "films", "owner_daily_limit": ` + limit + `}]}}`
		if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	limit := func(d *daemonProc) int64 {
		var rep struct {
			Sources []struct {
				Name       string `json:"name"`
				DailyLimit int64  `json:"daily_limit"`
			} `json:"sources"`
		}
		d.call(t, "GET", "/v1/budget", nil, 200, &rep)
		for _, s := range rep.Sources {
			if s.Name == "films" {
				return s.DailyLimit
			}
		}
		return -1
	}
	const warning = "overrides the configured budget source"
	write("1000")
	d := start(t, bin, db, "--config", config)
	write("2000")
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitfor.True(t, 10*time.Second, "the reload line", func() bool {
		return strings.Contains(d.logs.String(), "configuration reloaded")
	})
	if got := limit(d); got != 2000 {
		t.Fatalf("films limit %d after the reload, want 2000", got)
	}
	if strings.Contains(d.logs.String(), warning) {
		t.Fatalf("the reload reported an override:\n%s", d.logs.String())
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done

	write("3000")
	d2 := start(t, bin, db, "--config", config)
	if got := limit(d2); got != 3000 {
		t.Fatalf("films limit %d after a restart with the edited file, want 3000 (a stored override from the reload?)", got)
	}
	if strings.Contains(d2.logs.String(), warning) {
		t.Fatalf("the restart reported an override:\n%s", d2.logs.String())
	}
}
