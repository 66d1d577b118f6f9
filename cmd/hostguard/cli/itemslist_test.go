package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestItemsList(t *testing.T) {
	addr := daemon(t, "")
	a := []string{"--addr", addr, "--utc"}
	if out := mustRun(t, append([]string{"items", "list"}, a...)...); strings.TrimSpace(out) != "no items match" {
		t.Fatalf("empty queue: %q", out)
	}
	mustRun(t, append([]string{"items", "add", "a1", "a2", "a3", "b1", "b2"}, a...)...)
	out := mustRun(t, append([]string{"items", "list", "--limit", "2"}, a...)...)
	if !strings.Contains(out, "ID") || !strings.Contains(out, "a1") || !strings.Contains(out, "a2") || strings.Contains(out, "a3") {
		t.Fatalf("first page:\n%s", out)
	}
	if !strings.Contains(out, "UTC") || !strings.Contains(out, "ago") && !strings.Contains(out, "now") {
		t.Errorf("times without zone or relative time:\n%s", out)
	}
	// Follow the printed hint to the end: every item once.
	hint := regexp.MustCompile(`more: hostguard items list --limit 2 --after (\S+)`)
	seen := strings.Count(out, "pending")
	for range 5 {
		m := hint.FindStringSubmatch(out)
		if m == nil {
			break
		}
		out = mustRun(t, append([]string{"items", "list", "--limit", "2", "--after", m[1]}, a...)...)
		seen += strings.Count(out, "pending")
	}
	if seen != 5 || hint.MatchString(out) {
		t.Errorf("pages showed %d pending items, want 5; last page:\n%s", seen, out)
	}
	if out := mustRun(t, append([]string{"items", "list", "--state", "done"}, a...)...); strings.TrimSpace(out) != "no items match" {
		t.Errorf("no done items: %q", out)
	}
	if out := mustRun(t, append([]string{"items", "list", "--due-before", "-1h"}, a...)...); strings.TrimSpace(out) != "no items match" {
		t.Errorf("nothing due an hour ago: %q", out)
	}
	out = mustRun(t, append([]string{"items", "list", "--state", "pending", "--due-before", "1m", "--json"}, a...)...)
	var page struct {
		Items []struct{ ID string } `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Items) != 5 {
		t.Errorf("--json: %v, %q", err, out)
	}
	for _, args := range [][]string{
		{"--state", "sleeping"},
		{"--limit", "0"},
		{"--due-before", "tomorrow"},
		{"--after", "nonsense"},
	} {
		code, out, errs := run(append(append([]string{"items", "list"}, args...), a...)...)
		if code != ExitRefused || out != "" || errs == "" {
			t.Errorf("items list %q: exit %d, stdout %q, stderr %q; want exit %d", args, code, out, errs, ExitRefused)
		}
	}
}
