package cli

import (
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/retry"
	"github.com/hostguard/hostguard/server"
)

// itemsList is `hostguard items list`: a page of items, filtered, and the
// command for the next page.
func itemsList(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("items list", "", "Lists items in id order, a page at a time, without their payloads.", stdout, stderr)
	state := cmd.fs.String("state", "", "only items in these `states` (pending, scheduled, leased, done; comma-separated)")
	class := cmd.fs.String("class", "", "only items whose latest failure had this `class`")
	dueBefore := cmd.fs.String("due-before", "", "only pending and scheduled items due before this `time` (RFC 3339, or a duration from now such as 1h)")
	limit := cmd.fs.Int("limit", retry.DefaultListLimit, "most items on the page (1 to "+strconv.Itoa(retry.MaxListLimit)+")")
	after := cmd.fs.String("after", "", "the `cursor` the previous page printed")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return cmd.usageError("takes no arguments")
	}
	q := url.Values{"limit": {strconv.Itoa(*limit)}}
	if *limit < 1 || *limit > retry.MaxListLimit {
		return cmd.refuse("--limit: is %d; want 1 to %d", *limit, retry.MaxListLimit)
	}
	if *state != "" {
		if _, err := retry.ParseStates(*state); err != nil {
			_, reason, _ := server.InputField(err)
			return cmd.refuse("--state: %s", reason)
		}
		q.Set("state", *state)
	}
	if *class != "" {
		q.Set("class", *class)
	}
	if *dueBefore != "" {
		t, err := parseWhen(*dueBefore, time.Now())
		if err != nil {
			return cmd.refuse("--due-before: %q is neither an RFC 3339 time (2026-03-01T12:00:00Z) nor a duration (90m)", *dueBefore)
		}
		q.Set("due_before", t.UTC().Format(time.RFC3339Nano))
	}
	if *after != "" {
		q.Set("after", *after)
	}
	var page api.ItemPage
	if code, done := cmd.fetch("GET", "/v1/items", q, nil, &page); done {
		return code
	}
	rows := make([][]string, 0, len(page.Items))
	for _, it := range page.Items {
		rows = append(rows, itemRow(it))
	}
	empty := "no items match"
	if page.Next != "" {
		empty = "no matching items on this page (the daemon looks at a bounded number of items per page)"
	}
	table(stdout, empty, itemColumns, rows)
	if page.Next != "" {
		io.WriteString(stdout, "more: hostguard items list"+listFlagsText(*state, *class, q.Get("due_before"), *limit)+" --after "+page.Next+"\n")
	}
	return ExitOK
}

// parseWhen reads an RFC 3339 time, or a duration counted from now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, err
	}
	return now.Add(d), nil
}

// listFlagsText repeats the filters for the next page's command, the due
// bound as the absolute time the first page used so that pages agree.
func listFlagsText(state, class, dueBefore string, limit int) string {
	var b strings.Builder
	for _, f := range [][2]string{{"--state", state}, {"--class", class}, {"--due-before", dueBefore}} {
		if f[1] != "" {
			b.WriteString(" " + f[0] + " " + shellWord(f[1]))
		}
	}
	if limit != retry.DefaultListLimit {
		b.WriteString(" --limit " + strconv.Itoa(limit))
	}
	return b.String()
}

// shellWord quotes s for a POSIX shell when it holds anything but plain
// characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
