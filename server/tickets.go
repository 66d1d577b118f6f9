package server

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
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
	mu sync.Mutex
	m  map[string]*remoteTicket
	// held counts the tickets out per client, so one client cannot take
	// the whole table from the others.
	held  map[string]int
	lease time.Duration
	max   int
	now   func() time.Time
}

type remoteTicket struct {
	t       *guard.Ticket
	expires time.Time
	client  string
}

// clientShare is the part of MaxTickets one client may hold: a quarter of
// the default is 25 000, far beyond an honest heavy client (one ticket per
// request in flight), while four clients together are needed to fill it.
const clientShare = 4

func (tt *ticketTable) perClient() int { return max(tt.max/clientShare, 1) }

// drop removes id's ticket under the lock.
func (tt *ticketTable) drop(id string, rt *remoteTicket) {
	delete(tt.m, id)
	if tt.held[rt.client]--; tt.held[rt.client] <= 0 {
		delete(tt.held, rt.client)
	}
}

func newTicketTable(lease time.Duration, max int, now func() time.Time) *ticketTable {
	return &ticketTable{m: make(map[string]*remoteTicket), held: make(map[string]int), lease: lease, max: max, now: now}
}

// add stores t, held by client, under a new random id. It returns false
// when the table is full or client holds its share, in which case the
// caller must release t itself.
func (tt *ticketTable) add(t *guard.Ticket, client string) (id string, expires time.Time, ok bool) {
	var b [16]byte
	// Unguessable ids keep one client from reporting (or releasing)
	// another's ticket by counting.
	_, _ = rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if len(tt.m) >= tt.max || tt.held[client] >= tt.perClient() {
		return "", time.Time{}, false
	}
	expires = tt.now().Add(tt.lease)
	tt.m[id] = &remoteTicket{t: t, expires: expires, client: client}
	tt.held[client]++
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
	tt.drop(id, rt)
	return rt.t, true
}

// extend renews the lease of the ticket with id from now, for a holder
// whose request is still running. It returns false for a ticket that was
// never issued, was reported, or whose lease already ended: a lapsed
// ticket has been released and its trial may be someone else's.
func (tt *ticketTable) extend(id string) (endpoint string, expires time.Time, ok bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	rt, ok := tt.m[id]
	now := tt.now()
	if !ok || !now.Before(rt.expires) {
		return "", time.Time{}, false
	}
	rt.expires = now.Add(tt.lease)
	return rt.t.Endpoint(), rt.expires, true
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
			tt.drop(id, rt)
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
	tt.held = make(map[string]int)
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

// ticketClient is who holds a ticket for the fairness cap: the remote
// address without its port. The token does not tell clients apart (there
// is one per daemon, shared by all of them).
func ticketClient(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
