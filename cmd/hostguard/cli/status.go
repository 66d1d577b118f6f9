package cli

import (
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/retry"
)

func runStatus(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("status", "", "Shows what a running daemon holds: endpoints that are not closed, unhealthy hosts, and retry queue counts.", stdout, stderr)
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmd.usageError("takes no arguments")
	}
	var st api.Status
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
			rows = append(rows, []string{e.Endpoint.Endpoint, e.State, seconds(e.RetryAfterSeconds), strconv.Itoa(e.Failures), dash(e.LastFailure)})
		}
		table(stdout, "", []string{"ENDPOINT", "STATE", "TRIAL IN", "FAILURES", "LAST FAILURE"}, rows)
	}
	if st.Hosts != nil {
		printStatusHosts(stdout, st.Hosts, g.NotClosed)
	}
	if it := st.Items; it != nil && it.Total == 0 {
		fmt.Fprintln(stdout, "\nitems: the retry queue is empty")
	} else if it != nil {
		fmt.Fprintf(stdout, "\nitems: %d total, %d due now", it.Total, it.DueNow)
		if it.OldestDueLag > 0 {
			fmt.Fprintf(stdout, ", oldest due for %s", seconds(it.OldestDueLag.Seconds()))
		}
		fmt.Fprintln(stdout)
		printStats(stdout, &it.Stats)
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

// printStatusHosts is the hosts section of the status: the tracker's
// unhealthy hosts with the guard's view beside each, and the hosts the
// guard holds open endpoints on that the tracker has no failure of.
func printStatusHosts(stdout io.Writer, h *api.StatusHosts, notClosed []api.StatusEndpoint) {
	fmt.Fprintf(stdout, "\nhosts: %d known, %d unhealthy, %d in backoff\n", h.Known, h.Unhealthy, h.Backoff)
	hosts := make([]api.Host, len(h.UnhealthyHosts))
	for i, u := range h.UnhealthyHosts {
		hosts[i] = u.Host
	}
	tallies := guardByHost(notClosed)
	says := make(map[string]string, len(tallies))
	for name, t := range tallies {
		says[name] = t.String()
	}
	printHostsWithGuard(stdout, "every host is healthy: no host is in backoff", hosts, says)
	// The proxy and fetch report to the guard alone: name the hosts
	// it holds open endpoints on that the tracker has no failure of.
	if len(h.UnhealthyHosts) == h.Unhealthy {
		for _, u := range h.UnhealthyHosts {
			delete(tallies, u.Name)
		}
		var untracked []string
		for name, t := range tallies {
			if t.open > 0 {
				untracked = append(untracked, name)
			}
		}
		if len(untracked) > 0 {
			sort.Strings(untracked)
			fmt.Fprintf(stdout, "open endpoints on hosts the tracker has no failure of: %s (the guard's view, above)\n", strings.Join(untracked, ", "))
		}
	}
}

func printStats(w io.Writer, it *retry.Stats) {
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

// guardTally counts a host's endpoints that are not closed.
type guardTally struct{ open, halfOpen int }

// String is what the guard says of the host: "2 open, 1 half-open".
func (t guardTally) String() string {
	var parts []string
	if t.open > 0 {
		parts = append(parts, strconv.Itoa(t.open)+" open")
	}
	if t.halfOpen > 0 {
		parts = append(parts, strconv.Itoa(t.halfOpen)+" half-open")
	}
	return strings.Join(parts, ", ")
}

// guardByHost tallies the endpoints that are not closed by the host's
// name as the host tracker spells it.
func guardByHost(notClosed []api.StatusEndpoint) map[string]*guardTally {
	by := map[string]*guardTally{}
	for _, e := range notClosed {
		u, err := url.Parse(e.Endpoint.Endpoint)
		if err != nil {
			continue
		}
		name := strings.ToLower(u.Hostname())
		if by[name] == nil {
			by[name] = &guardTally{}
		}
		if e.State == "open" {
			by[name].open++
		} else {
			by[name].halfOpen++
		}
	}
	return by
}
