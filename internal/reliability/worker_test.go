package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// answer classifies a response from the worker's point of view.
type answer int

const (
	acked   answer = iota // 2xx: the daemon says it is done
	lost                  // 409: lease lost, nothing changed
	missing               // 404: no such item
	unknown               // no answer, or a 5xx: it may or may not have happened
)

// counts are a worker's figures.
type counts struct {
	adds, claims, succeeds, fails, extends int // acknowledged
	unknown, lost, fiveXX                  int
}

func (c *counts) plus(o counts) {
	c.adds += o.adds
	c.claims += o.claims
	c.succeeds += o.succeeds
	c.fails += o.fails
	c.extends += o.extends
	c.unknown += o.unknown
	c.lost += o.lost
	c.fiveXX += o.fiveXX
}

// writes is the number of acknowledged writes.
func (c counts) writes() int { return c.adds + c.claims + c.succeeds + c.fails + c.extends }

// worker is one HTTP client of the items API, keeping a log of what the
// daemons acknowledged.
type worker struct {
	id   int
	c    *cluster
	hc   *http.Client
	rng  *rand.Rand
	done <-chan struct{}

	seq    int
	held   []*leaseRec // leases left to run out, maybe settled late
	adds   []addRec
	leases []*leaseRec
	n      counts
	fiveXX []string // the first few 5xx answers, for the log

	// A 4xx other than 404 and 409 means the test and the daemon disagree
	// about the API: the run stops with it.
	mu       sync.Mutex
	protoErr error
}

func newWorker(id int, c *cluster, hc *http.Client, seed uint64, done <-chan struct{}) *worker {
	return &worker{id: id, c: c, hc: hc, rng: rand.New(rand.NewPCG(seed, uint64(id))), done: done}
}

// call sends one JSON request to a running daemon and decodes a 2xx
// answer into out.
func (w *worker) call(method, path string, body, out any) (answer, error) {
	d, ok := w.c.pick(w.done, w.rng)
	if !ok {
		return unknown, errors.New("stopped")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return unknown, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.api+path, bytes.NewReader(b))
	if err != nil {
		return unknown, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.hc.Do(req)
	if err != nil {
		return unknown, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return unknown, err
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		if out != nil {
			if err := json.Unmarshal(rb, out); err != nil {
				w.protocol(fmt.Errorf("%s %s: %v: %s", method, path, err, rb))
				return unknown, err
			}
		}
		return acked, nil
	case resp.StatusCode == http.StatusConflict:
		return lost, nil
	case resp.StatusCode == http.StatusNotFound:
		return missing, nil
	case resp.StatusCode >= 500:
		w.n.fiveXX++
		err := fmt.Errorf("cycle %d: %s %s: %d: %s", w.c.currentCycle(), method, path, resp.StatusCode, bytes.TrimSpace(rb))
		if len(w.fiveXX) < 3 {
			w.fiveXX = append(w.fiveXX, err.Error())
		}
		w.pause()
		return unknown, err
	}
	err = fmt.Errorf("%s %s with %s: %d: %s", method, path, b, resp.StatusCode, rb)
	w.protocol(err)
	return unknown, err
}

// pause backs off briefly after a 5xx, as a real client would, so that a
// store outage is not a busy loop.
func (w *worker) pause() {
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.done:
	}
}

func (w *worker) protocol(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.protoErr == nil {
		w.protoErr = err
	}
}

func (w *worker) protocolErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.protoErr
}

func (w *worker) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return w.protocolErr() != nil
	}
}

// run works until done is closed.
func (w *worker) run() {
	for !w.stopped() {
		w.add(4)
		w.settleLate()
		for _, l := range w.claim(4) {
			if w.stopped() {
				return
			}
			w.handle(l)
		}
	}
}

// add adds n new items, resending the same batch after an unknown outcome
// (adding is idempotent).
func (w *worker) add(n int) {
	ids := make([]string, n)
	items := make([]map[string]any, n)
	for i := range ids {
		w.seq++
		ids[i] = fmt.Sprintf("w%d-%06d", w.id, w.seq)
		items[i] = map[string]any{"id": ids[i], "priority": w.rng.IntN(3)}
	}
	for range 3 {
		cycle := w.c.currentCycle()
		switch a, _ := w.call("POST", "/v1/items", map[string]any{"items": items}, nil); a {
		case acked:
			w.adds = append(w.adds, addRec{ids: ids, worker: w.id, cycle: cycle, acked: time.Now()})
			w.n.adds += n
			return
		case unknown:
			w.n.unknown++
			if w.stopped() {
				return
			}
		default:
			w.protocol(fmt.Errorf("POST /v1/items: answer %d", a))
			return
		}
	}
}

// claim claims up to n items with a lease of 1 to 2.5 s, short enough
// that held leases run out and are claimed again within a cycle or two.
func (w *worker) claim(n int) []*leaseRec {
	length := time.Duration(1000+w.rng.IntN(1500)) * time.Millisecond
	var out struct {
		Leases []struct {
			ID      string    `json:"id"`
			Lease   string    `json:"lease"`
			Until   time.Time `json:"until"`
			Attempt int       `json:"attempt"`
		} `json:"leases"`
	}
	sent := time.Now()
	a, _ := w.call("POST", "/v1/items/claim", map[string]any{"n": n, "lease_seconds": length.Seconds(), "worker": fmt.Sprintf("w%d", w.id)}, &out)
	ackedAt := time.Now()
	if a != acked {
		w.n.unknown++
		return nil
	}
	cycle := w.c.currentCycle()
	recs := make([]*leaseRec, len(out.Leases))
	for i, l := range out.Leases {
		recs[i] = &leaseRec{item: l.ID, token: l.Lease, worker: w.id, cycle: cycle, attempt: l.Attempt,
			length: length, claimSent: sent, claimAcked: ackedAt, firstUntil: l.Until, until: l.Until}
	}
	w.leases = append(w.leases, recs...)
	w.n.claims += len(recs)
	return recs
}

// handle settles a lease one way or another: succeed, fail, extend first,
// or hold it to let it run out.
func (w *worker) handle(l *leaseRec) {
	k := w.rng.IntN(100)
	switch {
	case k < 40:
		w.settle(l, "succeed")
	case k < 60:
		w.settle(l, "fail")
	case k < 80:
		if !w.extend(l) {
			return
		}
		switch k2 := w.rng.IntN(10); {
		case k2 < 5:
			w.settle(l, "succeed")
		case k2 < 7:
			w.settle(l, "fail")
		default:
			w.held = append(w.held, l)
		}
	default:
		w.held = append(w.held, l)
	}
}

// settleLate goes through held leases that have run out: half are settled
// late (which the daemon honours unless the item was claimed again), the
// rest are dropped.
func (w *worker) settleLate() {
	now := time.Now()
	keep := w.held[:0]
	for _, l := range w.held {
		switch {
		case l.until.After(now):
			keep = append(keep, l)
		case w.rng.IntN(2) == 0:
			w.settle(l, "succeed")
		}
	}
	w.held = keep
}

// settle sends succeed or fail, resending after an unknown outcome: a
// repeat with the same lease is harmless.
func (w *worker) settle(l *leaseRec, op string) {
	body := map[string]any{"lease": l.token}
	if op == "fail" {
		body["class"], body["note"] = "timeout", "reliability worker"
	}
	l.op = op
	for range 3 {
		sent := time.Now()
		if l.opSent.IsZero() {
			l.opSent = sent
		}
		a, _ := w.call("POST", "/v1/items/"+l.item+"/"+op, body, nil)
		switch a {
		case acked:
			l.opAcked, l.opAckedAt, l.opCycle = true, time.Now(), w.c.currentCycle()
			if op == "succeed" {
				w.n.succeeds++
			} else {
				w.n.fails++
			}
			return
		case lost:
			l.lostAckedAt, l.lostOp, l.lostCycle = time.Now(), op, w.c.currentCycle()
			w.n.lost++
			return
		case missing:
			w.protocol(fmt.Errorf("cycle %d: item %s: %s answered no such item for %v", w.c.currentCycle(), l.item, op, l))
			return
		}
		w.n.unknown++
		if w.stopped() {
			return
		}
	}
}

// extend asks for 1 to 3 s more; it reports whether the lease is still
// worth settling.
func (w *worker) extend(l *leaseRec) bool {
	secs := 1 + float64(w.rng.IntN(20))/10
	for range 3 {
		var out struct {
			Until time.Time `json:"until"`
		}
		sent := time.Now()
		a, _ := w.call("POST", "/v1/items/"+l.item+"/extend", map[string]any{"lease": l.token, "lease_seconds": secs}, &out)
		switch a {
		case acked:
			// An extension sets the end from now, so it may shorten the
			// lease as well as lengthen it.
			l.until = out.Until
			l.extends++
			w.n.extends++
			return true
		case lost:
			l.lostAckedAt, l.lostOp, l.lostCycle = time.Now(), "extend", w.c.currentCycle()
			w.n.lost++
			return false
		case missing:
			w.protocol(fmt.Errorf("cycle %d: item %s: extend answered no such item for %v", w.c.currentCycle(), l.item, l))
			return false
		}
		// It may have been applied and shortened the lease: only the
		// earlier of the two ends is certain.
		if e := sent.Add(time.Duration(secs * float64(time.Second))); e.Before(l.until) {
			l.until = e
		}
		w.n.unknown++
		if w.stopped() {
			return false
		}
	}
	return false
}
