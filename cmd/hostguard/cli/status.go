package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
)

// statusJSON is the part of GET /v1/status the table shows.
type statusJSON struct {
	Guard struct {
		Endpoints     int            `json:"endpoints"`
		ByState       map[string]int `json:"by_state"`
		RemoteTickets int            `json:"remote_tickets"`
		NotClosed     []struct {
			Endpoint          string  `json:"endpoint"`
			State             string  `json:"state"`
			Failures          int     `json:"failures"`
			RetryAfterSeconds float64 `json:"retry_after_seconds"`
			LastFailure       string  `json:"last_failure"`
		} `json:"not_closed"`
	} `json:"guard"`
	Hosts *struct {
		Known     int `json:"known"`
		Unhealthy int `json:"unhealthy"`
		Backoff   int `json:"backoff"`
		// Unhealthy holds the hosts in backoff too, longest wait first.
		UnhealthyHosts []hostJSON `json:"unhealthy_hosts"`
	} `json:"hosts"`
	Items  *statsJSON `json:"items"`
	Leader struct {
		Leading bool   `json:"leading"`
		Elected bool   `json:"elected"`
		Node    string `json:"node"`
		Term    int64  `json:"term"`
	} `json:"leader"`
	Feeds    []feedJSON `json:"feeds"`
	Evidence *struct {
		Known       bool `json:"known"`
		Available   int  `json:"available"`
		Unavailable int  `json:"unavailable"`
	} `json:"evidence"`
	Problems []string `json:"problems"`
}

type statsJSON struct {
	Total   int            `json:"total"`
	ByState map[string]int `json:"by_state"`
	ByClass map[string]int `json:"by_class"`
	DueNow  int            `json:"due_now"`
	// LeasesExpired counts leases that ran out: claimable, not due.
	LeasesExpired int     `json:"leases_expired"`
	Lag           float64 `json:"oldest_due_lag_seconds"`
	// HostWakes and HostWoken count wakes of parked items whose host
	// answered again, and the items they made due.
	HostWakes int `json:"host_wakes"`
	HostWoken int `json:"host_woken"`
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("status", "", "Shows what a running daemon holds: endpoints that are not closed, unhealthy hosts, and retry queue counts.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("takes no arguments")
	}
	var st statusJSON
	if code, done := cmd.fetch("GET", "/v1/status", nil, nil, &st); done {
		return code
	}
	g := st.Guard
	fmt.Fprintf(stdout, "endpoints: %d known, %d open, %d half-open; %d remote tickets out\n",
		g.Endpoints, g.ByState["open"], g.ByState["half-open"], g.RemoteTickets)
	if len(g.NotClosed) == 0 {
		fmt.Fprintln(stdout, "no endpoint is open or half-open: every request goes through")
	} else {
		rows := make([][]string, 0, len(g.NotClosed))
		for _, e := range g.NotClosed {
			rows = append(rows, []string{e.Endpoint, e.State, seconds(e.RetryAfterSeconds), strconv.Itoa(e.Failures), dash(e.LastFailure)})
		}
		table(stdout, "", []string{"ENDPOINT", "STATE", "TRIAL IN", "FAILURES", "LAST FAILURE"}, rows)
	}
	if h := st.Hosts; h != nil {
		fmt.Fprintf(stdout, "\nhosts: %d known, %d unhealthy, %d in backoff\n", h.Known, h.Unhealthy, h.Backoff)
		printHosts(stdout, "every host is healthy: no host is in backoff", h.UnhealthyHosts)
	}
	if it := st.Items; it != nil && it.Total == 0 {
		fmt.Fprintln(stdout, "\nitems: the retry queue is empty")
	} else if it != nil {
		fmt.Fprintf(stdout, "\nitems: %d total, %d due now", it.Total, it.DueNow)
		if it.Lag > 0 {
			fmt.Fprintf(stdout, ", oldest due for %s", seconds(it.Lag))
		}
		fmt.Fprintln(stdout)
		printStats(stdout, it)
	}
	switch l := st.Leader; {
	case l.Leading && l.Elected:
		fmt.Fprintf(stdout, "\nleader: this node (%s) leads in term %d and runs the periodic work\n", l.Node, l.Term)
	case l.Leading:
		fmt.Fprintln(stdout, "\nleader: this node runs the periodic work")
	default:
		fmt.Fprintf(stdout, "\nleader: another node runs the periodic work (this is %s)\n", l.Node)
	}
	if len(st.Feeds) > 0 {
		failing := 0
		for _, f := range st.Feeds {
			if f.LastError != "" {
				failing++
			}
		}
		fmt.Fprintf(stdout, "feeds: %d, %d with a problem (hostguard feeds)\n", len(st.Feeds), failing)
	}
	if e := st.Evidence; e != nil && e.Known {
		fmt.Fprintf(stdout, "evidence: %d subjects available, %d unavailable\n", e.Available, e.Unavailable)
	}
	for _, p := range st.Problems {
		fmt.Fprintf(stdout, "\nproblem: %s\n", p)
	}
	return ExitOK
}

func printStats(w io.Writer, it *statsJSON) {
	rows := [][]string{}
	for _, s := range []string{"pending", "scheduled", "leased", "done"} {
		rows = append(rows, []string{s, strconv.Itoa(it.ByState[s])})
	}
	table(w, "", []string{"STATE", "ITEMS"}, rows)
	if len(it.ByClass) > 0 {
		classes := make([]string, 0, len(it.ByClass))
		for c := range it.ByClass {
			classes = append(classes, c)
		}
		sort.Strings(classes)
		rows = rows[:0]
		for _, c := range classes {
			rows = append(rows, []string{c, strconv.Itoa(it.ByClass[c])})
		}
		fmt.Fprintln(w)
		table(w, "", []string{"WAITING AFTER", "ITEMS"}, rows)
	}
	if it.LeasesExpired > 0 {
		leases := "leases"
		if it.LeasesExpired == 1 {
			leases = "lease"
		}
		fmt.Fprintf(w, "\n%d %s expired: claimable again, not counted as due now\n", it.LeasesExpired, leases)
	}
	if it.HostWakes > 0 {
		fmt.Fprintf(w, "\n%d items made due by %d wakes of hosts that answered again\n", it.HostWoken, it.HostWakes)
	}
}
