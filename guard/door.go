package guard

import (
	"errors"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// doorShare is the cap over the door's slots.
const doorShare = 8

// door decides which new endpoints earn a record once the guard holds
// about MaxEndpoints of them (see admit): one seen again soon, or one
// that fails. An endpoint seen once and answering carries no evidence a
// record would keep, and making it one costs an eviction, an allocation
// and the lock every new endpoint queues for; a stream of such endpoints
// would pay it on every call and push out records in use. So at the cap
// a first sighting only leaves the endpoint's fingerprint here, and its
// ticket is held by no record (kDoor): a host-level failure, or an answer
// slow enough to matter to the wait rule, makes the record then. A second
// sighting while the fingerprint is still here makes it at once. This is
// the doorkeeper of TinyLFU (Einziger, Friedman and Manes, 2017), without
// the frequency sketch behind it: the clock hand already keeps what is in
// use.
//
// The slots, an eighth of the cap (doorShare), are read and written
// without a lock: a lost race admits an endpoint one sighting late or
// early, and nothing else. Their number is the door's memory: an endpoint
// seen again before about that many others were turned away is in use, one
// seen again only after a whole cap of others is as cold as they are, and
// a record for it would only be evicted before its next use.
type door struct {
	seed  maphash.Seed
	slots []atomic.Uint32
	mask  uint64
}

func newDoor(maxEndpoints int) door {
	n := minTableSlots
	for n < maxEndpoints/doorShare {
		n *= 2
	}
	return door{seed: maphash.MakeSeed(), slots: make([]atomic.Uint32, n), mask: uint64(n - 1)}
}

// seenAgain reports whether key's fingerprint is in its slot, and leaves
// it there when it is not.
func (d *door) seenAgain(key string) bool {
	h := maphash.String(d.seed, key)
	s := &d.slots[h&d.mask]
	fp := uint32(h>>32) | 1 // 0 is an empty slot
	if s.Load() == fp {
		return true
	}
	s.Store(fp)
	return false
}

// doorTicket returns a ticket for key that no record holds, let in by the
// door at the cap. It is never refused: there is no evidence against the
// endpoint to refuse it by.
func (g *Guard) doorTicket(key string, kind uint8) *Ticket {
	return loose(g.doorStub, key, g.resets.Load(), kind|kDoor)
}

// doorFailed reports a failure of a ticket the door let in: one that could
// count makes the endpoint's record, if it has none by now, and counts
// there as a failure of a request in flight since before the record
// began: a sibling of any failure already counted, the first one
// otherwise. A Reset since the ticket was admitted voids it, as it voids
// any ticket admitted before it.
func (t *Ticket) doorFailed(err error) {
	g := t.ep.g
	if t.kind&kExempt != 0 || g.resets.Load() != t.seq || g.disabled() || !mayCount(g, err) {
		return
	}
	if rt := t.onRecord(true, kLate); rt != nil {
		rt.Failed(err)
	}
}

// mayCount reports whether err could count against a record that knows
// nothing of its endpoint: a host-level failure, or a give-up the wait
// rule would charge a host never seen answering.
func mayCount(g *Guard, err error) bool {
	var w *WaitError
	switch {
	case !errors.As(err, &w):
		return failure.Classify(err).HostLevel()
	case g.cfg.WaitFloor < 0:
		return failure.Classify(w.Err).HostLevel()
	}
	return w.Owed > g.cfg.WaitFloor
}

// doorAnswered reports an answer of a ticket the door let in, which took
// need to come (0: not measured). It clears the endpoint's record if one
// holds evidence by now, and makes the record when need is long enough
// that the wait rule would excuse a give-up by it: a slow host's answer
// is evidence worth a record. A fast answer on no record needs nothing.
func (t *Ticket) doorAnswered(need time.Duration) {
	g := t.ep.g
	keep := g.cfg.WaitFloor >= 0 && WaitFactor*need > g.cfg.WaitFloor
	if rt := t.onRecord(keep, 0); rt != nil {
		rt.AnsweredAfter(need)
	}
}

// onRecord admits a ticket on the record the ticket's endpoint has now,
// making it when create is set, for the ticket's report; nil when there is
// no record. It is admitted as Acquire admits a closed one, whatever the
// record's state: it only carries a report made already.
func (t *Ticket) onRecord(create bool, kind uint8) *Ticket {
	g, key := t.ep.g, *t.key
	for {
		ep := g.record(key, create)
		if ep == nil {
			return nil
		}
		if ep.flags.Load()&fEvicted == 0 {
			ep.out.Add(1)
			seq := ep.seq.Add(1)
			if ep.flags.Load()&fEvicted == 0 {
				ep.markUsed()
				return &Ticket{ep: ep, seq: seq, kind: kind}
			}
			ep.out.Add(-1)
		}
		ep.awaitEviction()
	}
}
