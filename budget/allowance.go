package budget

import "time"

const day = 24 * time.Hour

// LimitFrom says where a source's daily limit came from.
type LimitFrom string

const (
	LimitFromOwner    LimitFrom = "owner"
	LimitFromReported LimitFrom = "reported"
	LimitFromDefault  LimitFrom = "default"
)

// resolved is a Source with its derived figures, computed once per
// configuration change so that admission does only arithmetic.
type resolved struct {
	Source
	limit     int64
	limitFrom LimitFrom
	percent   int64
	allowance int64
	pace      time.Duration // 0: no pacing
	every     time.Duration // head-poll interval; 0 when the allowance is 0
	paused    bool          // by PauseSource
}

// resolve derives a source's figures:
//
//	daily limit = OwnerDailyLimit, else ReportedDailyLimit, else 1000
//	allowance   = floor(limit × percent / 100), percent = 5 (gentle),
//	              10 (normal) or 100 − ReservePercent (unlimited)
//	interval    = see pollInterval
func resolve(s Source, headPollEvery time.Duration) resolved {
	r := resolved{Source: s, limit: DefaultDailyLimit, limitFrom: LimitFromDefault}
	switch {
	case s.OwnerDailyLimit != nil:
		r.limit, r.limitFrom = *s.OwnerDailyLimit, LimitFromOwner
	case s.ReportedDailyLimit != nil:
		r.limit, r.limitFrom = *s.ReportedDailyLimit, LimitFromReported
	}
	switch s.Share {
	case ShareGentle:
		r.percent = 5
	case ShareUnlimited:
		r.percent = 100 - DefaultReservePercent
		if s.ReservePercent != nil {
			r.percent = 100 - *s.ReservePercent
		}
	default:
		r.percent = 10
	}
	r.allowance = mulDiv(r.limit, r.percent, 100)
	switch {
	case s.Pace == 0:
		r.pace = DefaultPace
	case s.Pace > 0:
		r.pace = s.Pace
	}
	r.every = pollInterval(r.allowance, headPollEvery)
	return r
}

// mulDiv returns floor(a×b/c) for non-negative a, b and positive c without
// overflowing for any daily limit a person could set.
func mulDiv(a, b, c int64) int64 {
	return a/c*b + a%c*b/c
}

// pollInterval is the head-poll interval for an allowance. Head polls may
// take at most half of the allowance, so that the other half is left for
// gap pages and searches:
//
//	polls  = floor(allowance / 2), at least 1
//	every  = base                 when polls ≥ ceil(24h / base)
//	       = 24h / polls          otherwise (stretched; rounded up)
//
// An allowance of 0 has no polls (interval 0). With the defaults, 100 →
// 30 min; 10 → 5 polls a day, every 4h48m.
func pollInterval(allowance int64, base time.Duration) time.Duration {
	if allowance <= 0 {
		return 0
	}
	polls := max(allowance/2, 1)
	need := int64((day + base - 1) / base)
	if polls >= need {
		return base
	}
	// Round up, so that a day never holds one poll more than planned.
	return (day + time.Duration(polls) - 1) / time.Duration(polls)
}

// headPollReserve is how many head polls the rest of the day still needs at
// interval every: ceil((next midnight − now) / every). Gap pages and
// searches may not eat into it.
func headPollReserve(now time.Time, every time.Duration) int64 {
	if every <= 0 {
		return 0
	}
	left := nextMidnight(now).Sub(now)
	return int64((left + every - 1) / every)
}

// utcDay returns the UTC midnight that starts t's day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// nextMidnight is when t's UTC day ends and its counters stop mattering.
func nextMidnight(t time.Time) time.Time { return utcDay(t).AddDate(0, 0, 1) }
