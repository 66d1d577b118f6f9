package transport_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/internal/logtest"
	"github.com/hostguard/hostguard/transport"
)

func TestOwnGuardLogsTransitionsOnly(t *testing.T) {
	t.Parallel()
	var out logtest.Buffer
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := transport.New(transport.Config{
		Base:   base,
		Logger: slog.New(slog.NewTextHandler(&out, nil)),
	})
	c := &http.Client{Transport: tr}
	dead := fault(t, faulthost.ClosedPort())
	live := fault(t, faulthost.Status(http.StatusOK))
	for range 3 {
		get(t, c, t.Context(), live.URL()+"/ok")
	}
	// Two failures open the endpoint; three fast-fails follow.
	for range 5 {
		get(t, c, t.Context(), "http://user:s3cret@"+dead.Addr()+"/private?token=hunter2")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d log lines, want 1 (one transition):\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], dead.URL()) {
		t.Errorf("log line %q does not name the endpoint %s", lines[0], dead.URL())
	}
	for _, secret := range []string{"s3cret", "user", "private", "hunter2"} {
		if strings.Contains(lines[0], secret) {
			t.Errorf("log line %q contains %q", lines[0], secret)
		}
	}
}
