package evidence

import (
	"fmt"
	"time"
)

// Verdict is what a check concluded about a subject. The zero value is
// Unknown.
type Verdict uint8

const (
	// Unknown means nothing trustworthy is known: no check, an expired one,
	// or a check that could not conclude.
	Unknown Verdict = 0
	// Available means a check found the subject usable.
	Available Verdict = 1
	// Unavailable means a check ran to completion and found the subject
	// missing or unusable.
	Unavailable Verdict = 2
)

// String returns "unknown", "available" or "unavailable".
func (v Verdict) String() string {
	switch v {
	case Unknown:
		return "unknown"
	case Available:
		return "available"
	case Unavailable:
		return "unavailable"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

func (v Verdict) valid() bool { return v <= Unavailable }

// Reason says why a verdict is Unknown. Definitive verdicts carry no reason.
type Reason string

// The reasons a check can leave a subject unknown, and the ones Get reports
// for verdicts that exist but no longer count.
const (
	ReasonNone        Reason = ""
	ReasonTimeout     Reason = "timeout"     // the source did not answer in time
	ReasonExhausted   Reason = "exhausted"   // an allowance or the source's own quota ran out
	ReasonUnsupported Reason = "unsupported" // the source cannot answer this kind of question
	ReasonError       Reason = "error"       // any other failure of the check itself
	ReasonMissing     Reason = "missing"     // no check was recorded (Get only)
	ReasonExpired     Reason = "expired"     // the verdict is older than its TTL (Get only)
)

// recordable reports whether a caller may record r with an Unknown check.
func (r Reason) recordable() bool {
	switch r {
	case ReasonNone, ReasonTimeout, ReasonExhausted, ReasonUnsupported, ReasonError:
		return true
	}
	return false
}

// Check is the outcome of one check, as given to Book.Record.
type Check struct {
	// Source names who was asked (an indexer, an account). Required.
	Source string
	// Subject names what was asked about. Required.
	Subject string
	// Verdict is the conclusion. Available and Unavailable must come from a
	// check that really ran; anything that failed to conclude is Unknown.
	Verdict Verdict
	// Reason explains an Unknown verdict (ReasonTimeout, ReasonExhausted,
	// ReasonUnsupported, ReasonError or empty). It must be empty for the
	// other verdicts.
	Reason Reason
}

// Record is one source's standing verdict about a subject, as Book.Get
// reports it.
type Record struct {
	Source      string
	Subject     string
	Fingerprint string
	// Verdict is the verdict in force now: a stored positive or negative
	// older than its TTL reads as Unknown with ReasonExpired.
	Verdict Verdict
	// Stored is the verdict as recorded, before expiry was applied.
	Stored Verdict
	// Reason explains an Unknown Verdict.
	Reason Reason
	// CheckedAt is when the stored verdict was checked; zero if none.
	CheckedAt time.Time
	// ExpiresAt is when a definitive Verdict stops counting; zero for
	// Unknown.
	ExpiresAt time.Time
}

// Summary is the verdict about one subject across every source.
type Summary struct {
	Subject string
	// Verdict is Available if any source holds a fresh positive,
	// Unavailable if none does and some source's fresh negative stands,
	// else Unknown.
	Verdict Verdict
	// Positive and Negative count the sources whose fresh verdict is
	// Available and Unavailable.
	Positive, Negative int
	// CheckedAt is the newest check among the counted verdicts.
	CheckedAt time.Time
}

func summarize(subject string, pos, neg int, checked time.Time) Summary {
	s := Summary{Subject: subject, Positive: pos, Negative: neg, CheckedAt: checked}
	switch {
	case pos > 0:
		s.Verdict = Available
	case neg > 0:
		s.Verdict = Unavailable
	}
	return s
}
