package newznab

import (
	"testing"
	"time"
)

func TestParseDateForms(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 20, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time // zero: not a date
	}{
		{"Tue, 01 Dec 2026 20:30:00 +0000", at},
		{"Xyz, 01 Dec 2026 20:30:00 +0000", at},
		{"Mar, 01 Dec 2026 20:30:00 +0000", at}, // a Spanish weekday, not March
		{"Tuesday 1 December 2026 20:30", at},
		{"01 Dec 26 20:30:00 GMT", at},
		{"Tue, 01 Dec 2026 21:30:00 CET", at},
		{"Tue, 01 Dec 2026 22:30:00 GMT+2", at},
		{"Tue, 01 Dec 2026 20:30:00 XYZT", at}, // unknown names read as UTC
		{"Tue, 01 Dec 2026 15:30:00 -05", at},
		{"Tue Dec  1 20:30:00 UTC 2026", at},
		{"2026-12-01T20:30:00z", at},
		{"2026-12-01t21:30:00+0100", at},
		{"2026-12-01T20:30", at},
		{"2026-12-01", at.Truncate(24 * time.Hour)},
		{"Tue, 31 Feb 2026 20:30:00 +0000", time.Time{}},
		{"Tue, 01 Dec 2026 25:30:00 +0000", time.Time{}},
		{"Tue, 01 Dec 2026 20:30:00 +2500", time.Time{}},
		{"1 Dec 1969 20:30:00", time.Time{}},
		{"1733085000", time.Time{}},
		{"soon", time.Time{}},
	} {
		got, ok := parseDate(c.in)
		if ok != !c.want.IsZero() || !got.Equal(c.want) {
			t.Errorf("parseDate(%q) = %v, %v; want %v", c.in, got, ok, c.want)
		}
	}
}

func TestDisabledUntilForms(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 20, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"Indexer is disabled till 12/1/2026 8:30:00 PM due to recent failures.", at},
		{"Indexer is disabled till 12/01/2026 20:30:00 due to recent failures.", at},
		{"Indexer is disabled till 01.12.2026 20:30:00 due to recent failures.", at},
		{"Indexer is disabled until 2026-12-01T20:30:00Z.", at},
		{"Indexer is disabled", time.Time{}},
		{"Indexer is disabled till further notice", time.Time{}},
	} {
		if got := disabledUntil(c.in); !got.Equal(c.want) {
			t.Errorf("disabledUntil(%q) = %v; want %v", c.in, got, c.want)
		}
	}
}

func TestRetryAfterForms(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"120", now.Add(2 * time.Minute)},
		{"Tue, 01 Dec 2026 20:30:00 GMT", now.Add(30 * time.Minute)},
		{"Tuesday, 01-Dec-26 20:30:00 GMT", now.Add(30 * time.Minute)},
		{"99999999", now.Add(maxRetryAfter)},
		{"0", time.Time{}},
		{"-5", time.Time{}},
		{"Tue, 01 Dec 2026 19:00:00 GMT", time.Time{}},
		{"later", time.Time{}},
	} {
		if got := retryAfter(c.in, now); !got.Equal(c.want) {
			t.Errorf("retryAfter(%q) = %v; want %v", c.in, got, c.want)
		}
	}
}
