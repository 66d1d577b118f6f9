package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// Sessions maps the dashboard's session ids, by their hash, to their
// expiry. The ids are never kept themselves, so a restart logs everyone
// out and a dump of the table names no session.
type Sessions struct {
	mu   sync.Mutex
	max  int
	life time.Duration
	now  func() time.Time
	byID map[[sha256.Size]byte]time.Time
	// csrfKey signs the sessions' CSRF tokens; it lives as long as the
	// sessions do.
	csrfKey [32]byte
}

// NewSessions returns a table of at most max sessions, each lasting
// life; now is the clock they expire by.
func NewSessions(max int, life time.Duration, now func() time.Time) *Sessions {
	t := &Sessions{max: max, life: life, now: now, byID: make(map[[sha256.Size]byte]time.Time)}
	rand.Read(t.csrfKey[:])
	return t
}

// CSRF is the CSRF token of the session id: what the dashboard's script
// sends with each action.
func (t *Sessions) CSRF(id string) string {
	m := hmac.New(sha256.New, t.csrfKey[:])
	m.Write([]byte("hostguard csrf\x00" + id))
	return hex.EncodeToString(m.Sum(nil))
}

// SessionName names a session in the log without giving away its id.
func SessionName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "session " + hex.EncodeToString(sum[:4])
}

// Create starts a session and returns its id and expiry; a full table
// ends the session closest to expiry first.
func (t *Sessions) Create() (string, time.Time) {
	id := rand.Text()
	now := t.now()
	exp := now.Add(t.life)
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.byID {
		if !e.After(now) {
			delete(t.byID, k)
		}
	}
	if len(t.byID) >= t.max {
		var first [sha256.Size]byte
		var firstExp time.Time
		for k, e := range t.byID {
			if firstExp.IsZero() || e.Before(firstExp) {
				first, firstExp = k, e
			}
		}
		delete(t.byID, first)
	}
	t.byID[sha256.Sum256([]byte(id))] = exp
	return id, exp
}

// Valid reports whether id names a live session. The id is hashed before
// the lookup, so the map's timing says nothing about ids.
func (t *Sessions) Valid(id string) bool {
	if id == "" {
		return false
	}
	k := sha256.Sum256([]byte(id))
	t.mu.Lock()
	defer t.mu.Unlock()
	exp, ok := t.byID[k]
	if ok && !exp.After(t.now()) {
		delete(t.byID, k)
		return false
	}
	return ok
}

// Remove ends the session id.
func (t *Sessions) Remove(id string) {
	k := sha256.Sum256([]byte(id))
	t.mu.Lock()
	delete(t.byID, k)
	t.mu.Unlock()
}

// Len is how many sessions are held.
func (t *Sessions) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
