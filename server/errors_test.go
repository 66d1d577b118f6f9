package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/internal/waitfor"
)

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"url":"http://a"}`, `{"url":`, `[]`, `{"url":5}`, `{"x":1}`, ``, `{} {}`, `{"url":"a"}garbage`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		var dst api.AcquireRequest
		s := &Server{cfg: Config{MaxBodyBytes: 64}}
		err := s.decodeJSON(httptest.NewRecorder(), r, &dst)
		if err == nil {
			return
		}
		e := s.errorFor(err)
		if e.Status != http.StatusBadRequest && e.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d for %q", e.Status, body)
		}
		if !strings.HasPrefix(e.Message, "server: ") {
			t.Fatalf("message %q lacks the package prefix", e.Message)
		}
	})
}

func TestRetryAfterNeverZero(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]int64{0: 1, -time.Second: 1, time.Millisecond: 1, 1500 * time.Millisecond: 2, 30 * time.Second: 30} {
		if got := retryAfterSeconds(d); got != want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestSweeperExpiresTicketsOnItsOwn checks the background sweeper, not
// just expireTickets: with the lease over on the fake clock, the ticket
// goes away without anyone calling in.
func TestSweeperExpiresTicketsOnItsOwn(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *Config) { c.SweepEvery = 5 * time.Millisecond; c.TicketLease = time.Minute })
	if a := f.do("POST", "/v1/guard/acquire", map[string]any{"url": "http://held.example"}); a.status != 200 {
		t.Fatal(a.status)
	}
	f.clock.Advance(time.Minute)
	waitfor.True(t, 5*time.Second, "the sweeper did not release an expired ticket", func() bool { return f.s.tickets.len() == 0 })
	if ep := f.endpoint(t, "http://held.example"); ep.TicketsOut != 0 {
		t.Fatalf("the guard still counts the ticket: %+v", ep)
	}
}
