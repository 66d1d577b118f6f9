package server

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// promtool returns the path of promtool, skipping the test without it
// except under CI=true, where .ci/run installs it and its absence is a
// failure.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed (Debian: apt-get install prometheus)")
		}
		t.Skip("promtool is not installed")
	}
	return p
}

// TestMetricsPassPromtool: what /metrics serves, with every family
// moving, passes `promtool check metrics` (names, units, help text).
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	tool := promtool(t)
	f := setup(t)
	f.do("POST", "/v1/hosts/up.example/touch", map[string]any{"ok": true})
	f.do("POST", "/v1/items", map[string]any{"items": []map[string]any{{"id": "a"}}})
	f.do("GET", fetchPath("http://127.0.0.1:1/"), nil)
	body := f.do("GET", "/metrics", nil).body
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestAlertRulesPassPromtool: the example alert rules parse, and every
// metric they use is one the daemon serves.
func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	tool := promtool(t)
	rules := filepath.Join("..", "dist", "alerts.yml")
	if out, err := exec.Command(tool, "check", "rules", rules).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	text, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t)
	f.do("GET", "/v1/status", nil)
	served := string(f.do("GET", "/metrics", nil).body)
	for _, word := range strings.FieldsFunc(string(text), func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if !strings.HasPrefix(word, "hostguard_") {
			continue
		}
		// A histogram's series are _bucket, _count and _sum of its family.
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			word = strings.TrimSuffix(word, suffix)
		}
		// Feed families appear only with a feed configured.
		if !strings.Contains(served, "# TYPE "+word+" ") && !strings.HasPrefix(word, "hostguard_feed_") {
			t.Errorf("dist/alerts.yml uses %s, which /metrics does not serve", word)
		}
	}
}
