package dashboard

import (
	"testing"
	"time"
)

// TestSessionsEndTheOldestWhenFull: a full table ends the session closest
// to expiry; an unknown or empty id is never valid.
func TestSessionsEndTheOldestWhenFull(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tab := NewSessions(2, time.Hour, func() time.Time { return now })
	first, _ := tab.Create()
	now = now.Add(time.Minute)
	second, _ := tab.Create()
	third, _ := tab.Create()
	if tab.Len() != 2 || tab.Valid(first) || !tab.Valid(second) || !tab.Valid(third) {
		t.Fatalf("a full table kept %d sessions; want the oldest ended", tab.Len())
	}
	if tab.Valid("") || tab.Valid("made-up") {
		t.Fatal("an unknown id is valid")
	}
	now = now.Add(time.Hour - time.Second)
	if !tab.Valid(second) {
		t.Fatal("a session ended before its hour")
	}
	now = now.Add(time.Second)
	if tab.Valid(second) || tab.Valid(third) {
		t.Fatal("a session outlived its hour")
	}
	if tab.CSRF(second) == tab.CSRF(third) {
		t.Fatal("two sessions have one CSRF token")
	}
}
