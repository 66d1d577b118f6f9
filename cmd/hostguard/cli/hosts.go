package cli

import (
	"io"
	"net/url"
	"strconv"

	"github.com/hostguard/hostguard/api"
	"github.com/hostguard/hostguard/health"
)

func runHosts(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("hosts", "[NAME]", "Lists the hosts a running daemon tracks, or shows one host by NAME; with --reset, forgets NAME's failures so its backoff ends.", stdout, stderr)
	reset := cmd.fs.Bool("reset", false, "forget the failures of host NAME, ending its backoff")
	view := cmd.fs.String("view", "all", "which hosts: healthy, available, unhealthy, backoff or all")
	limit := cmd.fs.Int("limit", 100, "most hosts to list (1 to 1000)")
	after := cmd.fs.String("after", "", "list hosts after this `name` (the next page)")
	pos, code, ok := cmd.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return cmd.usageError("takes at most one host name")
	}
	if *reset {
		if len(pos) != 1 {
			return cmd.usageError("--reset needs exactly one host name")
		}
		return resetHost(cmd, pos[0])
	}
	if len(pos) == 1 {
		return showHost(cmd, pos[0])
	}
	q := url.Values{"view": {*view}, "limit": {strconv.Itoa(*limit)}}
	if *after != "" {
		q.Set("after", *after)
	}
	var list api.HostPage
	if code, done := cmd.fetch("GET", "/v1/hosts", q, nil, &list); done {
		return code
	}
	printHosts(stdout, "no hosts in view "+*view, list.Hosts)
	if list.Next != "" {
		io.WriteString(stdout, "more: hostguard hosts --after "+list.Next+"\n")
	}
	return ExitOK
}

// showHost prints one host. A name the daemon would refuse, or one it has
// no record of (a 404), is exit 3. A daemon from before the 404 answered an
// unknown name with the healthy default and known false; that is refused
// the same way.
func showHost(cmd *daemonCommand, name string) int {
	if _, err := health.NormalizeName(name); err != nil {
		return cmd.refuse("%v", err)
	}
	var h api.Host
	raw, code, ok := cmd.call("GET", "/v1/hosts/"+url.PathEscape(name), nil, nil, &h)
	if !ok {
		return code
	}
	if !h.Known {
		// The name is not repeated: it may be anything a person typed.
		return cmd.refuse("the daemon tracks no host of that name (no outcome recorded since it was last reset)")
	}
	if cmd.flags.json {
		printRaw(cmd.stdout, raw)
		return ExitOK
	}
	printHosts(cmd.stdout, "", []api.Host{h})
	return ExitOK
}

// resetHost forgets one host's record. A name the daemon would refuse is
// exit 3; one it held no record of is said, not refused: either way the
// host is healthy now.
func resetHost(cmd *daemonCommand, name string) int {
	if _, err := health.NormalizeName(name); err != nil {
		return cmd.refuse("%v", err)
	}
	var res api.HostReset
	raw, code, ok := cmd.call("POST", "/v1/hosts/"+url.PathEscape(name)+"/reset", nil, nil, &res)
	if !ok {
		return code
	}
	switch {
	case cmd.flags.json:
		printRaw(cmd.stdout, raw)
	case res.Reset:
		io.WriteString(cmd.stdout, "reset: the host's failures are forgotten\n")
	default:
		io.WriteString(cmd.stdout, "nothing to reset: the daemon held no record of that host\n")
	}
	return ExitOK
}

func printHosts(w io.Writer, empty string, hosts []api.Host) {
	printHostsWithGuard(w, empty, hosts, nil)
}

// printHostsWithGuard is printHosts with a GUARD column after the name
// when guard is not nil: what the guard says of the host's endpoints
// (guardSays), as the dashboard's Hosts panel shows it.
func printHostsWithGuard(w io.Writer, empty string, hosts []api.Host, guard map[string]string) {
	rows := make([][]string, 0, len(hosts))
	for _, h := range hosts {
		name := h.Display
		if name == "" {
			name = h.Name
		}
		row := []string{name}
		if guard != nil {
			g, ok := guard[h.Name]
			if !ok {
				g = "closed"
			}
			row = append(row, g)
		}
		rows = append(rows, append(row, strconv.FormatBool(h.Healthy), strconv.FormatBool(h.Available),
			strconv.Itoa(h.ConsecutiveFails), seconds(h.RetryInSeconds), when(h.LastSuccess), when(h.LastFailure)))
	}
	head := []string{"HOST"}
	if guard != nil {
		head = append(head, "GUARD")
	}
	table(w, empty, append(head, "HEALTHY", "AVAILABLE", "FAILURES IN A ROW", "RETRY IN", "LAST SUCCESS", "LAST FAILURE"), rows)
}
