package server

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/hostguard/hostguard/guard"
)

// ticketTable holds the guard tickets handed to remote clients by
// POST /v1/guard/acquire. Each is a lease: a client that crashes or forgets
// to report would otherwise own a half-open endpoint's only trial slot
// forever, so a ticket unreported when its lease ends is released as
// inconclusive.
type ticketTable struct {
	mu    sync.Mutex
	m     map[string]*remoteTicket
	lease time.Duration
	max   int
	now   func() time.Time
}

type remoteTicket struct {
	t       *guard.Ticket
	expires time.Time
}

func newTicketTable(lease time.Duration, max int, now func() time.Time) *ticketTable {
	return &ticketTable{m: make(map[string]*remoteTicket), lease: lease, max: max, now: now}
}

// add stores t under a new random id. It returns false when the table is
// full, in which case the caller must release t itself.
func (tt *ticketTable) add(t *guard.Ticket) (id string, expires time.Time, ok bool) {
	var b [16]byte
	// Unguessable ids keep one client from reporting (or releasing)
	// another's ticket by counting.
	_, _ = rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if len(tt.m) >= tt.max {
		return "", time.Time{}, false
	}
	expires = tt.now().Add(tt.lease)
	tt.m[id] = &remoteTicket{t: t, expires: expires}
	return id, expires, true
}

// take removes and returns the ticket with id, so that exactly one report
// (or the sweeper) settles it.
func (tt *ticketTable) take(id string) (*guard.Ticket, bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	rt, ok := tt.m[id]
	if !ok {
		return nil, false
	}
	delete(tt.m, id)
	return rt.t, true
}

// expire releases every ticket whose lease has ended and says how many.
// Release runs outside the lock because it may call the guard's transition
// hook, which logs.
func (tt *ticketTable) expire() int {
	now := tt.now()
	var done []*guard.Ticket
	tt.mu.Lock()
	for id, rt := range tt.m {
		if !now.Before(rt.expires) {
			done = append(done, rt.t)
			delete(tt.m, id)
		}
	}
	tt.mu.Unlock()
	for _, t := range done {
		t.Release()
	}
	return len(done)
}

// releaseAll releases every ticket, for shutdown.
func (tt *ticketTable) releaseAll() {
	tt.mu.Lock()
	all := tt.m
	tt.m = make(map[string]*remoteTicket)
	tt.mu.Unlock()
	for _, rt := range all {
		rt.t.Release()
	}
}

func (tt *ticketTable) len() int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return len(tt.m)
}
