package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/budget"
)

func runBudget(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "admit":
			return budgetAdmit(args[1:], stdout, stderr)
		case "settle":
			return budgetSettle(args[1:], stdout, stderr)
		case "pause":
			return budgetPause(args[1:], true, stdout, stderr)
		case "resume":
			return budgetPause(args[1:], false, stdout, stderr)
		case "set-source":
			return budgetSetSource(args[1:], stdout, stderr)
		case "remove-source":
			return budgetRemoveSource(args[1:], stdout, stderr)
		case "reset-source":
			return budgetResetSource(args[1:], stdout, stderr)
		}
	}
	cmd := newDaemonCommand("budget", "", "Shows today's usage against the budget's allowances. Subcommands (each with --help): admit and settle work; pause and resume all background work, or one source's (--source); set-source and remove-source change the sources while the daemon runs; reset-source returns a configured source to its configured settings. Changes made this way are stored: they apply to every node sharing the store and outlive restarts, until removed.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("unknown subcommand %q (want admit, settle, pause, resume, set-source or remove-source)", pos[0])
	}
	var rep api.BudgetReport
	if code, done := cmd.fetch("GET", "/v1/budget", nil, nil, &rep); done {
		return code
	}
	paused := ""
	if rep.Paused {
		paused = " (background work PAUSED)"
	}
	fmt.Fprintf(stdout, "budget until %s%s: all sources used %d\n", when(rep.ResetAt), paused, rep.Total.Used)
	if len(rep.Sources) > 0 {
		rows := [][]string{}
		for _, s := range rep.Sources {
			rows = append(rows, []string{s.Name, itoa(s.Used), itoa(s.Allowance), itoa(s.Remaining),
				itoa(s.DailyLimit) + " (" + string(s.LimitFrom) + ")", s.Share, strconv.FormatBool(s.Exhausted), strconv.FormatBool(s.Paused)})
		}
		table(stdout, "no budget sources", []string{"SOURCE", "USED", "ALLOWANCE", "REMAINING", "DAILY LIMIT", "SHARE", "EXHAUSTED", "PAUSED"}, rows)
		fmt.Fprintln(stdout)
	}
	rows := [][]string{}
	for _, k := range rep.Kinds {
		amount := itoa
		if k.Kind == budget.KindBytes {
			amount = bytesText
		}
		allow := "-"
		if k.Limited {
			allow = amount(k.Allowance)
		}
		rows = append(rows, []string{string(k.Kind), amount(k.Used), allow})
	}
	table(stdout, "no kinds of work", []string{"WORK", "USED", "ALLOWANCE"}, rows)
	return ExitOK
}

func budgetAdmit(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("budget admit", "", "Asks the budget to admit one background request; exit 3 when it is refused (exhausted, paced, paused, disabled or unknown source).", stdout, stderr)
	fs := cmd.fs
	kind := fs.String("kind", "", "kind of work: head_poll, gap_page, search, validation, candidate, descriptor, bytes or foreground")
	source := fs.String("source", "", "the source the request goes to")
	cost := fs.Int64("cost", 0, "requests (0 means 1), or bytes to reserve for --kind bytes")
	wait := fs.Bool("wait", false, "wait for the source's pacing slot instead of being refused")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("takes no arguments")
	}
	if *kind == "" {
		return cmd.usageError("--kind is required")
	}
	var g api.Grant
	body := api.AdmitRequest{Kind: *kind, Source: *source, Cost: *cost, Wait: *wait}
	raw, code, ok := cmd.call("POST", "/v1/budget/admit", nil, body, &g)
	if !ok {
		return code
	}
	if cmd.flags.json || g.ID == "" {
		printRaw(stdout, raw)
		return ExitOK
	}
	fmt.Fprintln(stdout, g.ID)
	return ExitOK
}

func budgetSettle(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("budget settle", "GRANT_ID", "Settles a byte reservation at the figure the transfer really used.", stdout, stderr)
	actual := cmd.fs.Int64("actual", -1, "bytes really used (0 gives the whole reservation back)")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one grant id")
	}
	if *actual < 0 {
		return cmd.usageError("--actual is required and must not be negative")
	}
	raw, code, ok := cmd.call("POST", "/v1/budget/grants/"+url.PathEscape(pos[0])+"/settle", nil, api.GrantSettleRequest{Actual: actual}, nil)
	if !ok {
		return code
	}
	printRaw(stdout, raw)
	return ExitOK
}

func budgetPause(args []string, paused bool, stdout, stderr io.Writer) int {
	name, what := "budget resume", "Resumes background work paused by 'hostguard budget pause': all of it, or with --source one source's."
	if paused {
		name, what = "budget pause", "Pauses all background work on every node sharing the daemon's store, also after restarts: every background admission is refused until 'hostguard budget resume'. With --source, only the work of that source is paused, and the other sources go on. Foreground requests still pass."
	}
	cmd := newDaemonCommand(name, "", what, stdout, stderr)
	source := cmd.fs.String("source", "", "pause or resume this source only")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("takes no arguments (a source is named with --source)")
	}
	path, whose := "/v1/budget/pause", "background work"
	if *source != "" {
		path, whose = "/v1/budget/sources/"+url.PathEscape(*source)+"/pause", "background work of "+*source
	}
	if code, done := cmd.fetch("POST", path, nil, api.PauseRequest{Paused: &paused}, nil); done {
		return code
	}
	if paused {
		fmt.Fprintln(stdout, whose, "paused")
	} else {
		fmt.Fprintln(stdout, whose, "resumed")
	}
	return ExitOK
}

func budgetSetSource(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("budget set-source", "NAME", "Adds a budget source, or replaces what the owner said about one: settings not given take their defaults (the limit the source reported about itself stays). The next admission sees the change.", stdout, stderr)
	fs := cmd.fs
	limit := fs.Int64("daily-limit", 0, "the source's daily API limit as the owner knows it (default: the reported limit, else 1000; 0 stops all background work on it)")
	reported := fs.Int64("reported-limit", 0, "the daily limit the source reports about itself (0 clears it)")
	share := fs.String("share", "", "share of the daily limit: gentle (5%), normal (10%, the default) or unlimited")
	reserve := fs.Int64("reserve-percent", 0, "what the unlimited share keeps back for the owner (default 10)")
	pace := fs.Duration("pace", 0, "least time between two requests to the source (default 3s; 0s: no pacing)")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one source name")
	}
	// Only the flags given are sent: a setting left out takes its default.
	var body api.SourceRequest
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "daily-limit":
			body.OwnerDailyLimit = limit
		case "reported-limit":
			body.ReportedDailyLimit = reported
		case "share":
			body.Share = *share
		case "reserve-percent":
			body.ReservePercent = reserve
		case "pace":
			secs := pace.Seconds()
			body.PaceSeconds = &secs
		}
	})
	var v api.SourceConfig
	if code, done := cmd.fetch("PUT", "/v1/budget/sources/"+url.PathEscape(pos[0]), nil, body, &v); done {
		return code
	}
	verb, lim := "updated", "default"
	if v.Created {
		verb = "added"
	}
	if v.OwnerDailyLimit != nil {
		lim = itoa(*v.OwnerDailyLimit)
	}
	fmt.Fprintf(stdout, "%s source %s: daily limit %s, share %s, pace %s\n", verb, v.Name, lim, v.Share, (time.Duration(v.PaceSeconds * float64(time.Second))).String())
	return ExitOK
}

func budgetRemoveSource(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("budget remove-source", "NAME", "Removes what was set at run time for a budget source, on every node: a source added at run time is gone (admissions for it are refused as unknown), one from the configuration goes back to its configured settings. Its usage today stays counted. A source a configured feed polls cannot be removed.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one source name")
	}
	if _, code, ok := cmd.call("DELETE", "/v1/budget/sources/"+url.PathEscape(pos[0]), nil, nil, nil); !ok {
		return code
	}
	if cmd.flags.json {
		_ = json.NewEncoder(stdout).Encode(struct {
			Removed string `json:"removed"`
		}{pos[0]})
		return ExitOK
	}
	fmt.Fprintf(stdout, "removed source %s\n", pos[0])
	return ExitOK
}

func budgetResetSource(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("budget reset-source", "NAME", "Drops every run-time setting of a configured source (set-source's, and the limit the source reported), on every node, so that it runs on the settings of the configuration again; a source a feed polls too. Nothing to drop is not an error. Its usage today stays counted.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one source name")
	}
	if err := budget.ValidateSourceName(pos[0]); err != nil {
		return cmd.refuse("%v", err)
	}
	var v api.SourceReset
	if code, done := cmd.fetch("POST", "/v1/budget/sources/"+url.PathEscape(pos[0])+"/reset", nil, nil, &v); done {
		return code
	}
	if v.Reset {
		fmt.Fprintf(stdout, "source %s is back on its configured settings\n", v.Name)
	} else {
		fmt.Fprintf(stdout, "source %s had no run-time settings; it already runs on its configured ones\n", v.Name)
	}
	return ExitOK
}

// logOverrides logs each configured budget source whose stored run-time
// settings beat the configuration, at start and after a reload: edits to
// the file do not show for such a source until the override is dropped.
func logOverrides(ctx context.Context, log *slog.Logger, b *budget.Budget) {
	if err := b.Refresh(ctx); err != nil {
		log.Warn("hostguard: reading the stored budget settings failed", "err", err)
		return
	}
	for _, name := range b.Overridden() {
		log.Warn("hostguard: a stored run-time setting overrides the configured budget source; 'hostguard budget reset-source' drops it",
			"source", name)
	}
}
