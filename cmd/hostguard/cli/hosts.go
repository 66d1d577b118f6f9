package cli

import (
	"io"
	"net/url"
	"strconv"
	"time"
)

type hostJSON struct {
	Name             string    `json:"name"`
	Display          string    `json:"display"`
	ConsecutiveFails int       `json:"consecutive_fails"`
	Healthy          bool      `json:"healthy"`
	Available        bool      `json:"available"`
	RetryIn          float64   `json:"retry_in_seconds"`
	LastSuccess      time.Time `json:"last_success"`
	LastFailure      time.Time `json:"last_failure"`
	Successes        int64     `json:"successes"`
	Failures         int64     `json:"failures"`
}

func runHosts(args []string, stdout, stderr io.Writer) int {
	cmd := newDaemonCommand("hosts", "[NAME]", "Lists the hosts a running daemon tracks, or shows one host by NAME.", stdout, stderr)
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
	if len(pos) == 1 {
		var h hostJSON
		if code, done := cmd.fetch("GET", "/v1/hosts/"+url.PathEscape(pos[0]), nil, nil, &h); done {
			return code
		}
		printHosts(stdout, []hostJSON{h})
		return ExitOK
	}
	q := url.Values{"view": {*view}, "limit": {strconv.Itoa(*limit)}}
	if *after != "" {
		q.Set("after", *after)
	}
	var list struct {
		Hosts []hostJSON `json:"hosts"`
		Next  string     `json:"next"`
	}
	if code, done := cmd.fetch("GET", "/v1/hosts", q, nil, &list); done {
		return code
	}
	printHosts(stdout, list.Hosts)
	if list.Next != "" {
		io.WriteString(stdout, "more: hostguard hosts --after "+list.Next+"\n")
	}
	return ExitOK
}

func printHosts(w io.Writer, hosts []hostJSON) {
	rows := make([][]string, 0, len(hosts))
	for _, h := range hosts {
		name := h.Display
		if name == "" {
			name = h.Name
		}
		rows = append(rows, []string{name, strconv.FormatBool(h.Healthy), strconv.FormatBool(h.Available),
			strconv.Itoa(h.ConsecutiveFails), seconds(h.RetryIn), when(h.LastSuccess), when(h.LastFailure)})
	}
	table(w, []string{"HOST", "HEALTHY", "AVAILABLE", "FAILS IN A ROW", "RETRY IN", "LAST SUCCESS", "LAST FAILURE"}, rows)
}
