package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/retry"
)

const itemsUsage = `usage: hostguard items <subcommand> [flags] [args]

subcommands:
  add ID...                   add work items (--priority N, --payload TEXT or --payload-file F, --host H)
  claim                       lease due items (--n 10, --lease 30s, --worker NAME)
  stats                       counts by state and failure class
  list                        items a page at a time (--state S, --class C, --due-before T, --limit N, --after CURSOR)
  get ID                      show one item
  succeed ID --lease TOKEN    the work is done
  fail ID --lease TOKEN --class CLASS [--note TEXT] [--host H]
                              the attempt failed; the item waits on CLASS's ladder
  release ID --lease TOKEN    give the item back without counting an attempt
  extend ID --lease TOKEN --for 30s
  observe ID                  fresh evidence: make the item due soon and raise its priority
  due-now ID                  make a waiting item due at once (not an attempt)
  forget ID                   delete the item, whatever its state

Every subcommand takes --addr, --token, --json and --timeout; run
'hostguard items <subcommand> --help' for its flags.
`

func runItems(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, itemsUsage)
		return ExitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, itemsUsage)
		return ExitOK
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "add":
		return itemsAdd(rest, stdout, stderr)
	case "claim":
		return itemsClaim(rest, stdout, stderr)
	case "stats":
		return itemsStats(rest, stdout, stderr)
	case "get":
		return itemsGet(rest, stdout, stderr)
	case "list":
		return itemsList(rest, stdout, stderr)
	case "succeed", "fail", "release", "extend", "observe":
		return itemsOp(sub, rest, stdout, stderr)
	case "due-now", "forget":
		return itemsOperator(sub, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "hostguard items: unknown subcommand %q\n\n%s", sub, itemsUsage)
	return ExitUsage
}

func itemsAdd(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("items add", "ID...", "Adds work items. An id that is already queued keeps its state and history; a higher priority is taken over.", stdout, stderr)
	fs := cmd.fs
	prio := fs.Int("priority", 0, "priority of the new items; higher is claimed first")
	payload := fs.String("payload", "", "payload `text` handed back with every lease")
	payloadFile := fs.String("payload-file", "", "read the payload from this `file` (- for standard input)")
	host := fs.String("host", "", "the `host` the items depend on: when it answers again, items parked after a host-level failure become due")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return cmd.usageError("needs at least one item id")
	}
	if *payload != "" && *payloadFile != "" {
		return cmd.usageError("give --payload or --payload-file, not both")
	}
	var data []byte
	switch {
	case *payloadFile == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return cmd.fail(err)
		}
		data = b
	case *payloadFile != "":
		b, err := os.ReadFile(*payloadFile)
		if err != nil {
			return cmd.fail(err)
		}
		data = b
	default:
		data = []byte(*payload)
	}
	items := make([]api.NewItem, len(pos))
	for i, id := range pos {
		items[i] = api.NewItem{ID: id, Priority: *prio, Host: *host}
		if len(data) > 0 {
			items[i].Payload = data
		}
	}
	var res api.AddResult
	if code, done := cmd.fetch("POST", "/v1/items", nil, api.AddRequest{Items: items}, &res); done {
		return code
	}
	fmt.Fprintf(stdout, "added %d, already queued %d\n", res.Added, res.Existing)
	return ExitOK
}

func itemsClaim(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("items claim", "", "Leases up to --n due items, highest priority first. Settle each with succeed, fail or release before its lease ends.", stdout, stderr)
	n := cmd.fs.Int("n", 10, "most items to claim (1 to 1000)")
	lease := cmd.fs.Duration("lease", 30*time.Second, "how long each item is held")
	worker := cmd.fs.String("worker", "", "worker `name` shown by get")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("takes no arguments")
	}
	if *lease <= 0 {
		return cmd.usageError("--lease must be positive")
	}
	var res api.ClaimResponse
	secs := lease.Seconds()
	body := api.ClaimRequest{N: n, LeaseSeconds: &secs, Worker: *worker}
	if code, done := cmd.fetch("POST", "/v1/items/claim", nil, body, &res); done {
		return code
	}
	rows := make([][]string, 0, len(res.Leases))
	for _, l := range res.Leases {
		rows = append(rows, []string{l.ID, l.Token, strconv.Itoa(l.Attempt), strconv.Itoa(l.Priority), when(l.Until), dash(l.LastClass)})
	}
	table(stdout, "no item is due: nothing claimed", []string{"ID", "LEASE", "ATTEMPT", "PRIORITY", "UNTIL", "LAST FAILURE"}, rows)
	return ExitOK
}

func itemsStats(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("items stats", "", "Counts the retry queue's items by state and by the failure class they wait after.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("takes no arguments")
	}
	var st api.ItemsStats
	if code, done := cmd.fetch("GET", "/v1/items/stats", nil, nil, &st); done {
		return code
	}
	fmt.Fprintf(stdout, "%d items, %d due now\n", st.Total, st.DueNow)
	printStats(stdout, &st.Stats)
	return ExitOK
}

func itemsGet(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("items get", "ID", "Shows one item.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one item id")
	}
	var it api.Item
	if code, done := cmd.fetch("GET", "/v1/items/"+url.PathEscape(pos[0]), nil, nil, &it); done {
		return code
	}
	printItem(stdout, it)
	return ExitOK
}

func printItem(w io.Writer, it api.Item) {
	// One row: the empty-table text is never shown.
	table(w, "", itemColumns, [][]string{itemRow(it)})
}

var itemColumns = []string{"ID", "STATE", "PRIORITY", "ATTEMPTS", "FAILURES", "LAST FAILURE", "HOST", "NEXT"}

// itemRow is an item as the item tables show it: a leased item's next
// moment is its lease's end.
func itemRow(it api.Item) []string {
	next := when(it.NextAt)
	if it.State == retry.Leased {
		next = "lease until " + when(it.LeaseUntil)
	}
	return []string{it.ID, it.State.String(), strconv.Itoa(it.Priority), strconv.Itoa(it.Attempts), strconv.Itoa(it.Failures), dash(it.LastClass), dash(it.Host), next}
}

func itemsOp(op string, args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("items "+op, "ID", "Settles, extends or observes one item (see 'hostguard items --help').", stdout, stderr)
	fs := cmd.fs
	lease := fs.String("lease", "", "the lease `token` claim returned (succeed, fail, release, extend)")
	class := fs.String("class", "", "why the attempt failed (fail)")
	note := fs.String("note", "", "a short note kept in the item's history (fail)")
	failHost := fs.String("host", "", "the `host` the item depends on, replacing the one it had (fail)")
	extend := fs.Duration("for", 0, "new lease length from now (extend)")
	boost := fs.Int("boost", 0, "how much to raise the priority (observe; 0 means the daemon's step)")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one item id")
	}
	var body any
	switch {
	case op == "observe":
		body = api.ObserveRequest{Boost: *boost}
	case *lease == "":
		return cmd.usageError("--lease is required")
	}
	switch op {
	case "succeed", "release":
		body = api.LeaseRequest{Lease: *lease}
	case "fail":
		if *class == "" {
			return cmd.usageError("--class is required")
		}
		body = api.FailRequest{Lease: *lease, Class: *class, Note: *note, Host: *failHost}
	case "extend":
		if *extend <= 0 {
			return cmd.usageError("--for must be a positive duration")
		}
		secs := extend.Seconds()
		body = api.ExtendRequest{Lease: *lease, LeaseSeconds: &secs}
	}
	var it api.Item
	raw, code, ok := cmd.call("POST", "/v1/items/"+url.PathEscape(pos[0])+"/"+op, nil, body, &it)
	if !ok {
		return code
	}
	if cmd.flags.json || op == "extend" || op == "observe" {
		printRaw(stdout, raw)
		return ExitOK
	}
	printItem(stdout, it)
	return ExitOK
}

// itemsOperator runs the operator's item commands, the ones the
// dashboard's item list offers: due-now and forget.
func itemsOperator(op string, args []string, stdout, stderr io.Writer) int {
	what := map[string]string{
		"due-now": "Makes a pending or scheduled item due at once. It is not an attempt: failures, priority and history stay. A leased or done item is left as it is.",
		"forget":  "Deletes the item, whatever its state; a worker holding its lease loses it.",
	}[op]
	cmd := newDaemonCommand("items "+op, "ID", what, stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmd.usageError("needs exactly one item id")
	}
	method, path := "POST", "/v1/items/"+url.PathEscape(pos[0])+"/due-now"
	if op == "forget" {
		method, path = "DELETE", "/v1/items/"+url.PathEscape(pos[0])
	}
	var res api.DueNowResult
	raw, code, ok := cmd.call(method, path, nil, nil, &res)
	if !ok {
		return code
	}
	switch {
	case cmd.flags.json && op == "due-now":
		printRaw(stdout, raw)
	case cmd.flags.json:
		_ = json.NewEncoder(stdout).Encode(struct {
			Forgotten bool `json:"forgotten"`
		}{true})
	case op == "forget":
		fmt.Fprintln(stdout, "forgotten")
	case res.Moved:
		fmt.Fprintln(stdout, "due now")
	default:
		fmt.Fprintf(stdout, "not moved: the item is %s\n", res.State)
	}
	return ExitOK
}
