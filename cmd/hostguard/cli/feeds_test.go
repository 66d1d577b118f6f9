package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/internal/fakeindexer"
	"github.com/hostguard/hostguard/internal/waitfor"
	"github.com/hostguard/hostguard/server"
)

// staticIndexer serves three releases, a minute apart, which it returns
// oldest first.
func staticIndexer(t *testing.T) (string, []fakeindexer.Release) {
	x := fakeindexer.New(fakeindexer.Options{})
	t.Cleanup(x.Close)
	return x.URL(), x.PublishEvery(3, time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC), time.Minute)
}

func TestCLIFeedsAndBudgetControls(t *testing.T) {
	indexer, rels := staticIndexer(t)
	addr := daemonWith(t, "", []server.Feed{{Name: "idx", URL: indexer, APIKey: "the-key"}})
	a := []string{"--addr", addr}

	// The leader polls the feed at once.
	var out string
	waitfor.True(t, 10*time.Second, "the feed was synced", func() bool {
		out = mustRun(t, append([]string{"feeds", "--json"}, a...)...)
		var resp struct {
			Feeds []api.Feed `json:"feeds"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatal(err)
		}
		return len(resp.Feeds) == 1 && resp.Feeds[0].LastSync != nil
	})
	out = mustRun(t, append([]string{"feeds"}, a...)...)
	if !strings.Contains(out, "FEED") || !strings.Contains(out, "idx") || !strings.Contains(out, "caught-up") {
		t.Fatalf("feeds table:\n%s", out)
	}
	out = mustRun(t, append([]string{"feeds", "items", "idx", "--limit", "2"}, a...)...)
	if !strings.Contains(out, rels[2].Title) || !strings.Contains(out, rels[1].Title) || strings.Contains(out, rels[0].Title) {
		t.Fatalf("feeds items:\n%s", out)
	}
	out = mustRun(t, append([]string{"status"}, a...)...)
	if !strings.Contains(out, "leads in term 1") || !strings.Contains(out, "feeds: 1, 0 with a problem") {
		t.Fatalf("status:\n%s", out)
	}
	out = mustRun(t, append([]string{"feeds", "reset", "idx"}, a...)...)
	if out != "reset idx: its next sync starts at the head\n" {
		t.Fatalf("feeds reset: %q", out)
	}
	if code, _, errs := run(append([]string{"feeds", "reset", "nowhere"}, a...)...); code != ExitRefused || !strings.Contains(errs, "no feed") {
		t.Fatalf("reset of an unknown feed: exit %d, %q", code, errs)
	}

	// Budget controls: each change shows in the next admission.
	out = mustRun(t, append([]string{"budget", "set-source", "extra", "--daily-limit", "20", "--share", "gentle", "--pace", "0s"}, a...)...)
	if out != "added source extra: daily limit 20, share gentle, pace 0s\n" {
		t.Fatalf("set-source: %q", out)
	}
	mustRun(t, append([]string{"budget", "admit", "--kind", "head_poll", "--source", "extra"}, a...)...)
	if code, _, errs := run(append([]string{"budget", "admit", "--kind", "head_poll", "--source", "extra"}, a...)...); code != ExitRefused || !strings.Contains(errs, "used up") {
		t.Fatalf("second admission of a one-a-day source: exit %d, %q", code, errs)
	}
	if out := mustRun(t, append([]string{"budget", "pause"}, a...)...); out != "background work paused\n" {
		t.Fatalf("pause: %q", out)
	}
	if code, _, errs := run(append([]string{"budget", "admit", "--kind", "validation"}, a...)...); code != ExitRefused || !strings.Contains(errs, "paused") {
		t.Fatalf("admission while paused: exit %d, %q", code, errs)
	}
	if out := mustRun(t, append([]string{"budget"}, a...)...); !strings.Contains(out, "(background work PAUSED)") {
		t.Fatalf("budget report while paused:\n%s", out)
	}
	mustRun(t, append([]string{"budget", "resume"}, a...)...)
	mustRun(t, append([]string{"budget", "admit", "--kind", "validation"}, a...)...)
	// One source paused: its work is refused, the report's PAUSED column
	// says so, and work naming no source goes on.
	if out := mustRun(t, append([]string{"budget", "pause", "--source", "idx"}, a...)...); out != "background work of idx paused\n" {
		t.Fatalf("pause --source: %q", out)
	}
	if code, _, errs := run(append([]string{"budget", "admit", "--kind", "search", "--source", "idx"}, a...)...); code != ExitRefused || !strings.Contains(errs, "paused") {
		t.Fatalf("admission for a paused source: exit %d, %q", code, errs)
	}
	mustRun(t, append([]string{"budget", "admit", "--kind", "validation"}, a...)...)
	out = mustRun(t, append([]string{"budget"}, a...)...)
	if !regexp.MustCompile(`(?m)^SOURCE .* EXHAUSTED +PAUSED$`).MatchString(out) || !regexp.MustCompile(`(?m)^idx .* true$`).MatchString(out) ||
		strings.Contains(out, "(background work PAUSED)") {
		t.Fatalf("budget report with idx paused:\n%s", out)
	}
	if out := mustRun(t, append([]string{"budget", "resume", "--source", "idx"}, a...)...); out != "background work of idx resumed\n" {
		t.Fatalf("resume --source: %q", out)
	}
	if code, _, errs := run(append([]string{"budget", "pause", "--source", "nowhere"}, a...)...); code != ExitRefused || !strings.Contains(errs, "no source") {
		t.Fatalf("pausing an unknown source: exit %d, %q", code, errs)
	}
	if out := mustRun(t, append([]string{"budget", "remove-source", "extra"}, a...)...); out != "removed source extra\n" {
		t.Fatalf("remove-source: %q", out)
	}
	if code, _, _ := run(append([]string{"budget", "admit", "--kind", "head_poll", "--source", "extra"}, a...)...); code != ExitRefused {
		t.Fatalf("admission for a removed source: exit %d", code)
	}
	mustRun(t, append([]string{"budget", "set-source", "extra2", "--daily-limit", "20"}, a...)...)
	if out := mustRun(t, append([]string{"budget", "remove-source", "extra2", "--json"}, a...)...); out != "{\"removed\":\"extra2\"}\n" {
		t.Fatalf("remove-source --json: %q", out)
	}
	if code, _, errs := run(append([]string{"budget", "remove-source", "idx"}, a...)...); code != ExitRefused || !strings.Contains(errs, "feed") {
		t.Fatalf("removing a feed's source: exit %d, %q", code, errs)
	}
	if code, _, errs := run(append([]string{"budget", "set-source", "x", "--share", "greedy"}, a...)...); code != ExitRefused || !strings.Contains(errs, "share") {
		t.Fatalf("bad share: exit %d, %q", code, errs)
	}
	for _, args := range [][]string{
		{"feeds", "frob"},
		{"feeds", "items"},
		{"feeds", "reset", "a", "b"},
		{"feeds", "items", "idx", "--limit", "-1"},
		{"budget", "set-source"},
		{"budget", "pause", "now"},
		{"budget", "remove-source"},
	} {
		if code, _, _ := run(append(args, a...)...); code != ExitUsage {
			t.Errorf("hostguard %s: exit %d, want %d", strings.Join(args, " "), code, ExitUsage)
		}
	}
}
