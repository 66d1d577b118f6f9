package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// table prints rows aligned in columns for people.
func table(w io.Writer, header []string, rows [][]string) {
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

// dash is s for a table cell, "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when formats an instant for a table cell, in UTC; "-" for the zero time.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}
