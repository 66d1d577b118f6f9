package feed

import (
	"context"
	"errors"
	"time"
)

// ErrNotAdmitted marks an Admitter's refusal: the allowance is used up, the
// source is paced or paused. A refused sync stops cleanly and keeps what it
// read; it is not an error of the sync.
var ErrNotAdmitted = errors.New("feed: page request not admitted")

// ErrSourceExhausted marks a Source's answer that its own quota is used up
// (a Newznab "request limit reached"). Sources wrap or match it so that the
// Syncer can tell its Admitter to stop asking for the rest of the day.
var ErrSourceExhausted = errors.New("feed: the source says its request limit is reached")

// RetryAter is implemented by source errors that say when the source will
// serve again (a Retry-After header, "disabled till <time>"). When a page
// fails with ErrSourceExhausted and an error in its chain implements it,
// the Loop asks again at that time rather than after its own back-off.
type RetryAter interface {
	// RetryAt is when to ask again; the zero time when the source did not
	// say.
	RetryAt() time.Time
}

// Admitter decides whether a page request may go out. The Syncer asks it
// before every page, and the request waits for it.
type Admitter interface {
	// AdmitPage admits one page request to source: the head page of a sync
	// when head is true, a page of a gap otherwise. An error wrapping
	// ErrNotAdmitted is a refusal; any other error ends the sync as a
	// failure of the admission itself.
	AdmitPage(ctx context.Context, source string, head bool) error
}

// ExhaustionMarker is implemented by Admitters that can take a source's
// own "limit reached" answer into account; the Syncer calls it when a page
// fails with ErrSourceExhausted.
type ExhaustionMarker interface {
	// MarkExhausted marks source exhausted until until; zero means the
	// end of the UTC day.
	MarkExhausted(ctx context.Context, source string, until time.Time) error
}

// AdmitterFunc adapts a function to Admitter.
type AdmitterFunc func(ctx context.Context, source string, head bool) error

// AdmitPage calls f.
func (f AdmitterFunc) AdmitPage(ctx context.Context, source string, head bool) error {
	return f(ctx, source, head)
}

// admitAll admits every request, for a Syncer without a budget.
type admitAll struct{}

func (admitAll) AdmitPage(context.Context, string, bool) error { return nil }
