package cli

import (
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/hostguard/hostguard/api"
)

func runFeeds(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "items":
			return feedsItems(args[1:], stdout, stderr)
		case "reset":
			return feedsReset(args[1:], stdout, stderr)
		}
	}
	cmd := newDaemonCommand("feeds", "", "Shows every feed the daemon follows or has a stored position for: when it last synced, what it found, its gaps and its next poll. 'hostguard feeds items NAME' lists a feed's newest items; 'hostguard feeds reset NAME' makes its next sync start at the head.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("unknown subcommand %q (want items or reset)", pos[0])
	}
	var resp api.FeedList
	if code, done := cmd.fetch("GET", "/v1/feeds", nil, nil, &resp); done {
		return code
	}
	if len(resp.Feeds) == 0 {
		fmt.Fprintln(stdout, "no feeds configured")
		return ExitOK
	}
	if !resp.Leading {
		fmt.Fprintln(stdout, "this node does not lead: another node polls the feeds; positions are shared, the last-sync columns are this node's")
	}
	rows := make([][]string, 0, len(resp.Feeds))
	for _, f := range resp.Feeds {
		last := "never"
		switch {
		case f.LastSync != nil:
			last = when(*f.LastSync)
		case f.SyncedAt != nil:
			last = when(*f.SyncedAt)
		}
		state := f.LastStop
		if f.LastError != "" {
			state = f.LastError
		}
		if !f.Configured {
			state = "not configured"
		}
		next := "-"
		if f.NextHeadPoll != nil {
			next = when(*f.NextHeadPoll)
		}
		rows = append(rows, []string{f.Name, last, strconv.Itoa(f.LastItems), itoa(f.ItemsTotal), strconv.Itoa(f.Gaps), seconds(f.IntervalSeconds), next, dash(state)})
	}
	table(stdout, "no feeds", []string{"FEED", "LAST SYNC", "NEW", "ITEMS", "GAPS", "EVERY", "NEXT POLL", "STATE"}, rows)
	return ExitOK
}

func feedsItems(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("feeds items", "NAME", "Lists the newest items the daemon kept from a feed, newest first.", stdout, stderr)
	limit := cmd.fs.Int("limit", 0, "at most this many items (0: every item kept)")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one feed name")
	}
	if *limit < 0 {
		return cmd.usageError("--limit must not be negative")
	}
	q := url.Values{}
	if *limit > 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	var resp api.FeedItems
	if code, done := cmd.fetch("GET", "/v1/feeds/"+url.PathEscape(pos[0])+"/items", q, nil, &resp); done {
		return code
	}
	rows := make([][]string, 0, len(resp.Items))
	for _, it := range resp.Items {
		rows = append(rows, []string{when(it.Published), itoa(it.Size), it.Title})
	}
	table(stdout, "no items kept for this feed", []string{"PUBLISHED", "SIZE", "TITLE"}, rows)
	return ExitOK
}

func feedsReset(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("feeds reset", "NAME", "Forgets a feed's stored position and the ids it handed out: its next sync reads the head page only, as a first sync does.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one feed name")
	}
	var resp api.FeedReset
	if code, done := cmd.fetch("POST", "/v1/feeds/"+url.PathEscape(pos[0])+"/reset", nil, nil, &resp); done {
		return code
	}
	if resp.HadPosition {
		fmt.Fprintf(stdout, "reset %s: its next sync starts at the head\n", resp.Name)
	} else {
		fmt.Fprintf(stdout, "%s had no stored position\n", resp.Name)
	}
	return ExitOK
}
