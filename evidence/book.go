package evidence

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Book records and reads verdicts. It is safe for concurrent use. Create it
// with New; call Close to stop its background refresh.
type Book struct {
	st  Store
	cfg Config

	// fingerprint is the current policy as last read from the store.
	fingerprint atomic.Pointer[string]
	// gen counts the changes made through this Book (verdicts,
	// invalidations); a snapshot computed before the latest change is
	// stale.
	gen atomic.Uint64

	snap atomic.Pointer[Snapshot]

	ctx    context.Context // cancelled by Close; parent of every refresh
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	closed     bool
	refreshing bool
	retryAt    time.Time // no background refresh before this, after a failure
}

// New returns a Book over st.
func New(st Store, cfg Config) (*Book, error) {
	if st == nil {
		return nil, errors.New("evidence: nil Store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Book{st: st, cfg: cfg}
	fp := cfg.Fingerprint
	b.fingerprint.Store(&fp)
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b, nil
}

// Close stops the background refresh and waits for it to return. It does
// not close the Store.
func (b *Book) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	return nil
}

// CurrentFingerprint returns the policy fingerprint verdicts are recorded
// and read under, as last read from the store: every Record, Get,
// Summarize and snapshot refresh reads the current one, and
// InvalidatePolicy sets it. Before any of them it is Config.Fingerprint.
func (b *Book) CurrentFingerprint() string { return *b.fingerprint.Load() }

// current reads the policy in force from the store: the one stored by the
// last InvalidatePolicy of any node, else Config.Fingerprint.
func (b *Book) current(ctx context.Context) (string, error) {
	p, err := b.st.EvidencePolicy(ctx)
	if err != nil {
		return "", err
	}
	fp := b.cfg.Fingerprint
	if p.Set {
		fp = p.Fingerprint
	}
	b.adopt(fp)
	return fp, nil
}

// adopt makes fp this Book's current fingerprint; a change makes the
// snapshot stale.
func (b *Book) adopt(fp string) {
	if cur := b.fingerprint.Load(); *cur == fp {
		return
	}
	b.fingerprint.Store(&fp)
	b.gen.Add(1)
}

// Record stores the outcome of one check under the current fingerprint,
// checked now. An Unknown outcome never replaces a stored Available or
// Unavailable, so a timeout cannot erase what an earlier check found.
func (b *Book) Record(ctx context.Context, c Check) error {
	if err := b.live(); err != nil {
		return err
	}
	if err := validateCheck(c); err != nil {
		return err
	}
	reason := c.Reason
	if c.Verdict == Unknown && reason == ReasonNone {
		reason = ReasonError
	}
	fp, err := b.current(ctx)
	if err != nil {
		return err
	}
	err = b.st.EvidenceRecord(ctx, StoreRecordParams{
		Row: Row{
			Key:       Key{Fingerprint: fp, Subject: c.Subject, Source: c.Source},
			Verdict:   c.Verdict,
			Reason:    reason,
			CheckedAt: b.now(),
		},
		MaxRows:   b.cfg.MaxRows,
		TrimBatch: trimBatch,
	})
	if err != nil {
		return err
	}
	b.gen.Add(1)
	return nil
}

func validateCheck(c Check) error {
	if err := checkKey("source", c.Source, MaxSourceBytes, false); err != nil {
		return err
	}
	if err := checkKey("subject", c.Subject, MaxSubjectBytes, false); err != nil {
		return err
	}
	if !c.Verdict.valid() {
		return invalid("verdict", "%d is not Unknown, Available or Unavailable", c.Verdict)
	}
	if !c.Reason.recordable() {
		return invalid("reason", "%q is not one of timeout, exhausted, unsupported, error", clip(string(c.Reason)))
	}
	if c.Verdict != Unknown && c.Reason != ReasonNone {
		return invalid("reason", "%q given with verdict %s; only Unknown carries a reason", c.Reason, c.Verdict)
	}
	return nil
}

// Get returns source's verdict about subject under the current fingerprint,
// with expiry applied. A missing verdict is Unknown with ReasonMissing.
func (b *Book) Get(ctx context.Context, source, subject string) (Record, error) {
	if err := b.live(); err != nil {
		return Record{}, err
	}
	if err := checkKey("source", source, MaxSourceBytes, false); err != nil {
		return Record{}, err
	}
	if err := checkKey("subject", subject, MaxSubjectBytes, false); err != nil {
		return Record{}, err
	}
	fp, err := b.current(ctx)
	if err != nil {
		return Record{}, err
	}
	row, ok, err := b.st.EvidenceGet(ctx, Key{Fingerprint: fp, Subject: subject, Source: source})
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return Record{Source: source, Subject: subject, Fingerprint: fp, Reason: ReasonMissing}, nil
	}
	return b.effective(row, b.now()), nil
}

// effective applies expiry to a stored row.
func (b *Book) effective(row Row, now time.Time) Record {
	r := Record{
		Source: row.Source, Subject: row.Subject, Fingerprint: row.Fingerprint,
		Verdict: row.Verdict, Stored: row.Verdict, Reason: row.Reason, CheckedAt: row.CheckedAt,
	}
	var ttl time.Duration
	switch row.Verdict {
	case Available:
		ttl = b.cfg.TTL
	case Unavailable:
		ttl = b.cfg.NegativeTTL
	default:
		return r
	}
	r.ExpiresAt = row.CheckedAt.Add(ttl)
	if !now.Before(r.ExpiresAt) {
		r.Verdict, r.Reason, r.ExpiresAt = Unknown, ReasonExpired, time.Time{}
	}
	return r
}

// Summarize reads every source's verdict about subject under the current
// fingerprint and combines them (see Summary). It always asks the store;
// readers that must not wait use Snapshot.
func (b *Book) Summarize(ctx context.Context, subject string) (Summary, []Record, error) {
	if err := b.live(); err != nil {
		return Summary{}, nil, err
	}
	if err := checkKey("subject", subject, MaxSubjectBytes, false); err != nil {
		return Summary{}, nil, err
	}
	fp, err := b.current(ctx)
	if err != nil {
		return Summary{}, nil, err
	}
	rows, err := b.st.EvidenceSubject(ctx, fp, subject)
	if err != nil {
		return Summary{}, nil, err
	}
	now := b.now()
	recs := make([]Record, 0, len(rows))
	var pos, neg int
	var newest time.Time
	for _, row := range rows {
		r := b.effective(row, now)
		recs = append(recs, r)
		switch r.Verdict {
		case Available:
			pos++
		case Unavailable:
			neg++
		default:
			continue
		}
		if r.CheckedAt.After(newest) {
			newest = r.CheckedAt
		}
	}
	return summarize(subject, pos, neg, newest), recs, nil
}

// InvalidatePolicy makes fingerprint the current policy of every node that
// shares the store, and deletes every positive verdict recorded under any
// other fingerprint, in one store transaction. The policy is stored: every
// node's next Record, Get, Summarize or snapshot reads it, and it outlives
// restarts, winning over Config.Fingerprint. Negative and unknown verdicts
// of other fingerprints stay (they are invisible under the new one, and
// the cap eventually prunes them). It returns how many positives it
// deleted. Calling it with the current fingerprint switches nothing and
// just clears positives of others that a node still on the old policy may
// have written since; a second node making the same switch deletes only
// those.
func (b *Book) InvalidatePolicy(ctx context.Context, fingerprint string) (int64, error) {
	if err := b.live(); err != nil {
		return 0, err
	}
	if err := checkKey("fingerprint", fingerprint, MaxFingerprintBytes, true); err != nil {
		return 0, err
	}
	res, err := b.st.EvidenceSetPolicy(ctx, StoreSetPolicyParams{Fingerprint: fingerprint, Now: b.now().UTC().Truncate(time.Microsecond)})
	if err != nil {
		return 0, err
	}
	b.adopt(fingerprint)
	// Positives were deleted even when the fingerprint stayed.
	b.gen.Add(1)
	return res.Deleted, nil
}

// Prune deletes the oldest verdicts until the table is back under
// Config.MaxRows, in bounded batches. Record already trims a few rows per
// write; Prune is for catching up after the cap was lowered. It stops early
// when ctx is done and returns how many rows it deleted.
func (b *Book) Prune(ctx context.Context) (int64, error) {
	if err := b.live(); err != nil {
		return 0, err
	}
	var total int64
	for {
		n, err := b.st.EvidencePrune(ctx, StorePruneParams{MaxRows: b.cfg.MaxRows, Batch: pruneBatch})
		total += n
		if err != nil {
			return total, err
		}
		if n < pruneBatch {
			if total > 0 {
				b.gen.Add(1)
			}
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

func (b *Book) now() time.Time { return b.cfg.Now() }

func (b *Book) live() error {
	if b.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}
