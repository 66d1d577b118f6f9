package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// table prints rows aligned in columns for people. With no rows it prints
// empty, a sentence saying there is nothing, instead of a lone header.
func table(w io.Writer, empty string, header []string, rows [][]string) {
	if len(rows) == 0 {
		fmt.Fprintln(w, empty)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// seconds formats a count of seconds for a table cell.
func seconds(s float64) string {
	if s <= 0 {
		return "-"
	}
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}

// itoa formats n for a table cell.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// bytesText formats a count of bytes for people: 512 B, 1.5 KiB, 50.0 MiB.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), -1
	for (v >= unit || v <= -unit) && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}

// dash is s for a table cell, "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// displaySettings say how times are shown: in which zone, relative to when.
type displaySettings struct {
	loc *time.Location
	now func() time.Time
}

func newDisplay(utc bool) displaySettings {
	if utc {
		return displaySettings{loc: time.UTC, now: time.Now}
	}
	return displaySettings{loc: time.Local, now: time.Now}
}

// display is the setting of the command this process runs (one a
// process); parse sets it from --utc.
var display = newDisplay(false)

// when formats an instant for a table cell: the time in the display zone,
// the zone named, and how far it is from now ("2026-12-01 14:03:05 CET,
// 3m ago"); "-" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(display.loc).Format("2006-01-02 15:04:05 MST") + ", " + relative(t.Sub(display.now()))
}

// relative says d from now for people: "in 5m", "3h ago", "now".
func relative(d time.Duration) string {
	ago := d < 0
	if ago {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		s = strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		s = strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		s = strconv.Itoa(int(d/time.Hour)) + "h"
	default:
		s = strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	if ago {
		return s + " ago"
	}
	return "in " + s
}
