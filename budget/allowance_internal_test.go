package budget

import (
	"testing"
	"time"
)

func TestResolveAllowance(t *testing.T) {
	tests := []struct {
		name      string
		src       Source
		limit     int64
		from      LimitFrom
		allowance int64
	}{
		{"default limit, normal share", Source{}, 1000, LimitFromDefault, 100},
		{"gentle", Source{Share: ShareGentle}, 1000, LimitFromDefault, 50},
		{"unlimited keeps 10 % back", Source{Share: ShareUnlimited}, 1000, LimitFromDefault, 900},
		{"unlimited with own reserve", Source{Share: ShareUnlimited, ReservePercent: Int(25)}, 1000, LimitFromDefault, 750},
		{"unlimited, no reserve", Source{Share: ShareUnlimited, ReservePercent: Int(0)}, 1000, LimitFromDefault, 1000},
		{"reported", Source{ReportedDailyLimit: Int(250)}, 250, LimitFromReported, 25},
		{"owner beats reported", Source{OwnerDailyLimit: Int(40), ReportedDailyLimit: Int(250)}, 40, LimitFromOwner, 4},
		{"rounds down", Source{OwnerDailyLimit: Int(99)}, 99, LimitFromOwner, 9},
		{"gentle rounds down to zero", Source{OwnerDailyLimit: Int(19), Share: ShareGentle}, 19, LimitFromOwner, 0},
		{"owner zero disables", Source{OwnerDailyLimit: Int(0), ReportedDailyLimit: Int(500)}, 0, LimitFromOwner, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resolve(tt.src, DefaultHeadPollEvery)
			if r.limit != tt.limit || r.limitFrom != tt.from || r.allowance != tt.allowance {
				t.Fatalf("limit %d from %s, allowance %d; want %d from %s, %d", r.limit, r.limitFrom, r.allowance, tt.limit, tt.from, tt.allowance)
			}
		})
	}
}

func TestMulDivMatchesBigArithmetic(t *testing.T) {
	for _, a := range []int64{0, 1, 7, 99, 1000, 1 << 40, 1<<62 - 1} {
		for _, b := range []int64{0, 5, 10, 90, 100} {
			want := a / 100 * b // exact for these a when a%100 == 0
			got := mulDiv(a, b, 100)
			if a%100 == 0 && got != want {
				t.Errorf("mulDiv(%d, %d, 100) = %d; want %d", a, b, got, want)
			}
			if got < 0 || got > a {
				t.Errorf("mulDiv(%d, %d, 100) = %d out of range", a, b, got)
			}
		}
	}
	if got := mulDiv(99, 10, 100); got != 9 {
		t.Errorf("mulDiv(99, 10, 100) = %d; want 9", got)
	}
}

func TestPollInterval(t *testing.T) {
	// ceilDiv is 24h / n rounded up to the nanosecond.
	ceilDiv := func(n int64) time.Duration { return (24*time.Hour + time.Duration(n) - 1) / time.Duration(n) }
	tests := []struct {
		allowance int64
		base      time.Duration
		want      time.Duration
	}{
		{100, 30 * time.Minute, 30 * time.Minute}, // 50 polls, 48 needed
		{96, 30 * time.Minute, 30 * time.Minute},  // exactly 48
		{95, 30 * time.Minute, ceilDiv(47)},       // 47 polls
		{10, 30 * time.Minute, ceilDiv(5)},        // 4h48m
		{3, 30 * time.Minute, 24 * time.Hour},     // 1 poll
		{1, 30 * time.Minute, 24 * time.Hour},     // still 1 poll
		{0, 30 * time.Minute, 0},                  // disabled
		{1000, 7 * time.Minute, 7 * time.Minute},  // 206 needed, 500 fit
		{300, 7 * time.Minute, ceilDiv(150)},      // 150 < 206
		{100000, 24 * time.Hour, 24 * time.Hour},
		{2, 24 * time.Hour, 24 * time.Hour},
		{20, 90 * time.Minute, ceilDiv(10)}, // 10 < 16
		{40, 90 * time.Minute, 90 * time.Minute},
	}
	for _, tt := range tests {
		got := pollInterval(tt.allowance, tt.base)
		if got != tt.want {
			t.Errorf("pollInterval(%d, %v) = %v; want %v", tt.allowance, tt.base, got, tt.want)
		}
		if got > 0 {
			polls := int64((24*time.Hour + got - 1) / got)
			if polls > max(tt.allowance/2, 1) {
				t.Errorf("pollInterval(%d, %v) = %v allows %d polls a day, more than half the allowance", tt.allowance, tt.base, got, polls)
			}
		}
	}
}

func TestHeadPollReserve(t *testing.T) {
	day := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		at    time.Duration // since midnight
		every time.Duration
		want  int64
	}{
		{0, 30 * time.Minute, 48},
		{time.Microsecond, 30 * time.Minute, 48},
		{30 * time.Minute, 30 * time.Minute, 47},
		{12 * time.Hour, 30 * time.Minute, 24},
		{24*time.Hour - time.Microsecond, 30 * time.Minute, 1},
		{12 * time.Hour, 24 * time.Hour / 5, 3},
		{12 * time.Hour, 0, 0},
	}
	for _, tt := range tests {
		if got := headPollReserve(day.Add(tt.at), tt.every); got != tt.want {
			t.Errorf("headPollReserve(+%v, %v) = %d; want %d", tt.at, tt.every, got, tt.want)
		}
	}
}

func TestUTCDay(t *testing.T) {
	east := time.FixedZone("east", 5*3600)
	at := time.Date(2025, 3, 15, 2, 0, 0, 0, east) // 2025-03-14 21:00 UTC
	if got, want := utcDay(at), time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("utcDay = %v; want %v", got, want)
	}
	if got, want := nextMidnight(at), time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("nextMidnight = %v; want %v", got, want)
	}
}
