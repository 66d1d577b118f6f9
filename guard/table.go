package guard

import (
	"hash/maphash"
	"sync/atomic"
)

// table maps endpoint keys to records: open addressing with linear
// probing, read without any lock, written only under Guard.ringMu. A
// stream of new endpoints above the cap inserts and deletes a record for
// every one, which a general concurrent map pays for with a trie walk and
// a node allocation each; here an insert or delete is one slot store.
//
// Deleted slots hold a tombstone so that probe chains stay whole for
// readers, and lookups that miss walk to the next empty slot: so when live
// records and tombstones fill half the slots, the writer builds a new table
// with four slots per live record and
// publishes it in one store; readers still on the old one see a consistent
// past (writers no longer touch it), and one that misses a record created
// since looks again under ringMu.
type table struct {
	slots []atomic.Pointer[endpoint]
	mask  uint64
	seed  maphash.Seed
	live  int // guarded by ringMu, as is tombs
	tombs int
}

// tombstone marks a deleted slot.
var tombstone = new(endpoint)

const minTableSlots = 64

func newTable(slots int, seed maphash.Seed) *table {
	n := minTableSlots
	for n < slots {
		n *= 2
	}
	return &table{slots: make([]atomic.Pointer[endpoint], n), mask: uint64(n - 1), seed: seed}
}

// get returns the record for key, or nil.
func (t *table) get(key string) *endpoint {
	for i := maphash.String(t.seed, key) & t.mask; ; i = (i + 1) & t.mask {
		ep := t.slots[i].Load()
		if ep == nil {
			return nil
		}
		if ep != tombstone && ep.key == key {
			return ep
		}
	}
}

// put inserts ep, whose key the table does not hold. It returns the table
// to use from now on, a new one when this one was full enough to rebuild.
// Call with ringMu held.
func (t *table) put(ep *endpoint, ring []*endpoint) *table {
	if (t.live+t.tombs+1)*2 > len(t.slots) {
		nt := newTable(max((t.live+1)*4, minTableSlots), t.seed)
		for _, r := range ring {
			if r != nil && !r.evicted && r != ep {
				nt.insert(r)
			}
		}
		nt.insert(ep)
		return nt
	}
	t.insert(ep)
	return t
}

func (t *table) insert(ep *endpoint) {
	for i := maphash.String(t.seed, ep.key) & t.mask; ; i = (i + 1) & t.mask {
		switch old := t.slots[i].Load(); old {
		case nil:
			t.slots[i].Store(ep)
			t.live++
			return
		case tombstone:
			t.slots[i].Store(ep)
			t.live++
			t.tombs--
			return
		}
	}
}

// remove deletes ep. Call with ringMu held.
func (t *table) remove(ep *endpoint) {
	for i := maphash.String(t.seed, ep.key) & t.mask; ; i = (i + 1) & t.mask {
		switch t.slots[i].Load() {
		case nil:
			return
		case ep:
			t.slots[i].Store(tombstone)
			t.live--
			t.tombs++
			return
		}
	}
}
