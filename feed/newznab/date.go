package newznab

import (
	"strconv"
	"strings"
	"time"
)

// parseDate reads a publish date as indexers write them: RFC 1123 and
// RFC 822 with or without a weekday (any word before the day is taken for
// one, so a wrong or localised weekday name does not matter, since the date
// itself says which day it was), RFC 850's dashed dates, ANSI C and Unix
// date(1) order, and ISO 8601 with a 'T' or a space. Zones may be numeric
// (+0200, +02:00, +02) or named (UTC, GMT, the US zones of RFC 822 and a
// few common European and Asian ones); a date with no zone, or with a name
// this table does not know, is read as UTC. ok is false when s is empty,
// not a date, or a year before 1970 or after 9999, which no release has.
func parseDate(s string) (t time.Time, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 100 {
		return time.Time{}, false
	}
	if isDigit(s[0]) && len(s) >= 10 && s[4] == '-' {
		t, ok = parseISO(s)
	} else {
		t, ok = parseRFC822(s)
	}
	if !ok || t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, false
	}
	return t, true
}

// isoLayouts are tried in order on an ISO 8601 date whose zone is numeric
// or absent. Go accepts fractional seconds after the seconds field without
// saying so in the layout.
var isoLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05Z07",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

func parseISO(s string) (time.Time, bool) {
	if len(s) > 10 && (s[10] == ' ' || s[10] == 't') {
		s = s[:10] + "T" + s[11:]
	}
	// A named zone after the time: "2006-01-02 15:04:05 UTC".
	offset := 0
	if i := strings.LastIndexByte(s, ' '); i > 10 {
		off, ok := zoneOffset(s[i+1:])
		if !ok {
			return time.Time{}, false
		}
		s, offset = s[:i], off
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	for _, l := range isoLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.Add(-time.Duration(offset) * time.Second).UTC(), true
		}
	}
	return time.Time{}, false
}

// parseRFC822 reads "[weekday,] 2 Jan 2006 15:04[:05] [zone]", its
// variants with a two-digit year or a dashed date ("06-Nov-94"), and the
// month-first order of ANSI C ("Jan 2 15:04:05 [zone] 2006").
func parseRFC822(s string) (time.Time, bool) {
	// A word before a comma is the weekday, whatever it says (a Spanish
	// "Mar," is Tuesday, not March); so is a leading word that is not a
	// month.
	if i := strings.IndexByte(s, ','); i > 0 && isLetters(strings.TrimSpace(s[:i])) {
		s = s[i+1:]
	}
	f := strings.Fields(strings.ReplaceAll(s, ",", " "))
	if len(f) > 0 && isLetters(f[0]) && month(f[0]) == 0 {
		f = f[1:]
	}
	if len(f) > 0 && strings.Count(f[0], "-") == 2 {
		// RFC 850: "06-Nov-94 08:49:37 GMT".
		f = append(strings.Split(f[0], "-"), f[1:]...)
	}
	if len(f) < 3 {
		return time.Time{}, false
	}
	var day, mon, year int
	var clock, zone string
	switch {
	case month(f[0]) != 0 && len(f) >= 4:
		// Month first: "Jan 2 15:04:05 2006" or "Jan 2 15:04:05 MST 2006".
		mon, day = month(f[0]), number(f[1], 1, 2)
		clock = f[2]
		rest := f[3:]
		if len(rest) == 2 {
			zone, rest = rest[0], rest[1:]
		}
		if len(rest) != 1 {
			return time.Time{}, false
		}
		year = yearOf(rest[0])
	case month(f[1]) != 0:
		day, mon, year = number(f[0], 1, 2), month(f[1]), yearOf(f[2])
		switch len(f) {
		case 3:
			clock = "00:00:00"
		case 4:
			clock = f[3]
		case 5:
			clock, zone = f[3], f[4]
		default:
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	if day < 1 || mon == 0 || year < 0 {
		return time.Time{}, false
	}
	h, m, sec, nsec, ok := clockOf(clock)
	if !ok {
		return time.Time{}, false
	}
	offset := 0
	if zone != "" {
		if offset, ok = zoneOffset(zone); !ok {
			return time.Time{}, false
		}
	}
	t := time.Date(year, time.Month(mon), day, h, m, sec, nsec, time.UTC)
	if t.Day() != day {
		return time.Time{}, false // 31 Feb and the like
	}
	return t.Add(-time.Duration(offset) * time.Second), true
}

var months = map[string]int{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	"january": 1, "february": 2, "march": 3, "april": 4, "june": 6, "july": 7,
	"august": 8, "sept": 9, "september": 9, "october": 10, "november": 11, "december": 12,
}

func month(s string) int { return months[strings.ToLower(s)] }

// number parses a decimal of minDigits to maxDigits digits; -1 otherwise.
func number(s string, minDigits, maxDigits int) int {
	if len(s) < minDigits || len(s) > maxDigits {
		return -1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return -1
		}
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// yearOf reads a four-digit year, or a two-digit one as RFC 822 wrote them
// (70-99 are the 1900s).
func yearOf(s string) int {
	switch len(s) {
	case 4:
		return number(s, 4, 4)
	case 2:
		y := number(s, 2, 2)
		switch {
		case y < 0:
			return -1
		case y >= 70:
			return 1900 + y
		}
		return 2000 + y
	}
	return -1
}

// clockOf reads "15:04", "15:04:05" or "15:04:05.999".
func clockOf(s string) (h, m, sec, nsec int, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, 0, false
	}
	h, m = number(parts[0], 1, 2), number(parts[1], 2, 2)
	if len(parts) == 3 {
		secs := parts[2]
		if i := strings.IndexByte(secs, '.'); i >= 0 {
			frac := secs[i+1:]
			if len(frac) == 0 || len(frac) > 9 || number(frac, 1, 9) < 0 {
				return 0, 0, 0, 0, false
			}
			nsec = number(frac+strings.Repeat("0", 9-len(frac)), 9, 9)
			secs = secs[:i]
		}
		sec = number(secs, 2, 2)
	}
	if h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60 {
		return 0, 0, 0, 0, false
	}
	if sec == 60 {
		sec = 59 // a leap second: close enough, and time.Date would roll over
	}
	return h, m, sec, nsec, true
}

// namedZones are the zone names seen in feeds, in seconds east of UTC.
// Ambiguous names (IST, CST outside the US) take their RFC 822 or most
// common meaning.
var namedZones = map[string]int{
	"ut": 0, "utc": 0, "gmt": 0, "z": 0, "zulu": 0, "wet": 0,
	"est": -5 * 3600, "edt": -4 * 3600, "cst": -6 * 3600, "cdt": -5 * 3600,
	"mst": -7 * 3600, "mdt": -6 * 3600, "pst": -8 * 3600, "pdt": -7 * 3600,
	"bst": 3600, "west": 3600, "cet": 3600, "cest": 2 * 3600, "met": 3600, "mest": 2 * 3600,
	"eet": 2 * 3600, "eest": 3 * 3600, "msk": 3 * 3600,
	"jst": 9 * 3600, "kst": 9 * 3600, "hkt": 8 * 3600, "sgt": 8 * 3600,
	"aest": 10 * 3600, "aedt": 11 * 3600, "nzst": 12 * 3600, "nzdt": 13 * 3600,
}

// zoneOffset reads a zone: numeric (+0200, -02:00, +02, also after "GMT"
// or "UTC") or a name. A name of letters this table lacks reads as UTC: a
// date hours off sorts better than no date at all.
func zoneOffset(z string) (int, bool) {
	lz := strings.ToLower(z)
	for _, p := range []string{"gmt", "utc"} {
		if len(lz) > len(p) && strings.HasPrefix(lz, p) && (lz[len(p)] == '+' || lz[len(p)] == '-') {
			lz = lz[len(p):]
		}
	}
	if lz == "" {
		return 0, false
	}
	if lz[0] == '+' || lz[0] == '-' {
		sign := 1
		if lz[0] == '-' {
			sign = -1
		}
		d := strings.ReplaceAll(lz[1:], ":", "")
		var h, m int
		switch len(d) {
		case 1, 2:
			h, m = number(d, 1, 2), 0
		case 4:
			h, m = number(d[:2], 2, 2), number(d[2:], 2, 2)
		default:
			return 0, false
		}
		if h < 0 || h > 14 || m < 0 || m > 59 {
			return 0, false
		}
		return sign * (h*3600 + m*60), true
	}
	if off, ok := namedZones[lz]; ok {
		return off, true
	}
	if isLetters(lz) && len(lz) <= 5 {
		return 0, true
	}
	return 0, false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isLetters(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date.
// It returns the zero time for an absent, unreadable or past value.
func retryAfter(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return time.Time{}
		}
		return now.Add(time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second)
	}
	t, ok := parseDate(v)
	if !ok || !t.After(now) {
		return time.Time{}
	}
	if limit := now.Add(maxRetryAfter); t.After(limit) {
		return limit
	}
	return t
}
