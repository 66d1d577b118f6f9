package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"
)

func init() {
	register("budget", "show today's budget usage, or admit / settle background work (budget admit|settle)", runBudget)
}

type lineJSON struct {
	Kind      string `json:"kind"`
	Used      int64  `json:"used"`
	Limited   bool   `json:"limited"`
	Allowance int64  `json:"allowance"`
	Remaining int64  `json:"remaining"`
}

type budgetReportJSON struct {
	ResetAt time.Time `json:"reset_at"`
	Paused  bool      `json:"paused"`
	Total   lineJSON  `json:"total"`
	Sources []struct {
		Name       string `json:"name"`
		DailyLimit int64  `json:"daily_limit"`
		LimitFrom  string `json:"limit_from"`
		Share      string `json:"share"`
		Allowance  int64  `json:"allowance"`
		Used       int64  `json:"used"`
		Remaining  int64  `json:"remaining"`
		Exhausted  bool   `json:"exhausted"`
	} `json:"sources"`
	Kinds []lineJSON `json:"kinds"`
}

func runBudget(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "admit":
			return budgetAdmit(args[1:], stdout, stderr)
		case "settle":
			return budgetSettle(args[1:], stdout, stderr)
		}
	}
	var cf clientFlags
	fs := newFlagSet("budget", "", "Shows today's usage against the budget's allowances. 'hostguard budget admit --help' and 'hostguard budget settle --help' admit and settle work.", stderr)
	cf.register(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, fs, "unknown subcommand %q (want admit or settle)", pos[0])
	}
	c, err := cf.client()
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	var rep budgetReportJSON
	var raw []byte
	if err := c.do(context.Background(), "GET", "/v1/budget", nil, nil, &rep, &raw); err != nil {
		return fail(stderr, "budget", err)
	}
	if cf.json {
		printRaw(stdout, raw)
		return ExitOK
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
				itoa(s.DailyLimit) + " (" + s.LimitFrom + ")", s.Share, strconv.FormatBool(s.Exhausted)})
		}
		table(stdout, []string{"SOURCE", "USED", "ALLOWANCE", "REMAINING", "DAILY LIMIT", "SHARE", "EXHAUSTED"}, rows)
		fmt.Fprintln(stdout)
	}
	rows := [][]string{}
	for _, k := range rep.Kinds {
		allow := "-"
		if k.Limited {
			allow = itoa(k.Allowance)
		}
		rows = append(rows, []string{k.Kind, itoa(k.Used), allow})
	}
	table(stdout, []string{"WORK", "USED", "ALLOWANCE"}, rows)
	return ExitOK
}

func budgetAdmit(args []string, stdout, stderr io.Writer) int {
	var cf clientFlags
	fs := newFlagSet("budget admit", "", "Asks the budget to admit one background request; exit 3 when it is refused (exhausted, paced, paused, disabled or unknown source).", stderr)
	cf.register(fs)
	kind := fs.String("kind", "", "kind of work: head_poll, gap_page, search, validation, candidate, descriptor, bytes or foreground")
	source := fs.String("source", "", "the source the request goes to")
	cost := fs.Int64("cost", 0, "requests (0 means 1), or bytes to reserve for --kind bytes")
	wait := fs.Bool("wait", false, "wait for the source's pacing slot instead of being refused")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, fs, "takes no arguments")
	}
	if *kind == "" {
		return usageError(stderr, fs, "--kind is required")
	}
	c, err := cf.client()
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	var raw []byte
	var g struct {
		ID string `json:"id"`
	}
	body := map[string]any{"kind": *kind, "source": *source, "cost": *cost, "wait": *wait}
	if err := c.do(context.Background(), "POST", "/v1/budget/admit", nil, body, &g, &raw); err != nil {
		return fail(stderr, "budget admit", err)
	}
	if cf.json || g.ID == "" {
		printRaw(stdout, raw)
		return ExitOK
	}
	fmt.Fprintln(stdout, g.ID)
	return ExitOK
}

func budgetSettle(args []string, stdout, stderr io.Writer) int {
	var cf clientFlags
	fs := newFlagSet("budget settle", "GRANT_ID", "Settles a byte reservation at the figure the transfer really used.", stderr)
	cf.register(fs)
	actual := fs.Int64("actual", -1, "bytes really used (0 gives the whole reservation back)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, fs, "needs exactly one grant id")
	}
	if *actual < 0 {
		return usageError(stderr, fs, "--actual is required and must not be negative")
	}
	c, err := cf.client()
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	var raw []byte
	if err := c.do(context.Background(), "POST", "/v1/budget/grants/"+url.PathEscape(pos[0])+"/settle", nil, map[string]any{"actual": *actual}, nil, &raw); err != nil {
		return fail(stderr, "budget settle", err)
	}
	printRaw(stdout, raw)
	return ExitOK
}
