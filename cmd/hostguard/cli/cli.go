// Package cli implements the hostguard subcommands. It is a package of its own
// so that main stays tiny and the commands can be tested in process.
package cli

import (
	"fmt"
	"io"
)

// Exit codes that scripts can rely on.
const (
	ExitOK    = 0
	ExitError = 1 // the command ran and failed
	ExitUsage = 2 // the command line was wrong
)

// command is one subcommand: a name, a one-line summary and its entry point.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

// commands is every subcommand, in the order help lists them. Each lives in
// the file of its name.
var commands = []command{
	{"budget", "show today's budget usage; admit or settle work; pause, resume, set, remove or reset sources (budget admit|settle|pause|resume|set-source|remove-source|reset-source)", runBudget},
	{"feeds", "show the feeds the leader follows, their items, or reset one (feeds items|reset)", runFeeds},
	{"hosts", "list hosts the daemon tracks (--view healthy|available|unhealthy|backoff|all), or show one", runHosts},
	{"items", "work with the retry queue: add, claim, stats, list, get, succeed, fail, release, extend, observe", runItems},
	{"migrate", "create or upgrade a store's schema and print its version", runMigrate},
	{"reset", "forget the failures of a URL's endpoint so the next request goes through", runReset},
	{"serve", "run the daemon: JSON API, guarded fetch, forward proxy, metrics, status page", runServe},
	{"status", "show open endpoints, hosts in backoff, the retry queue, leadership and feeds of a running daemon", runStatus},
	{"version", "print the version of this binary", runVersion},
}

// lookup returns the command called name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// Main runs the subcommand named by args[0] and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return ExitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		// Asked for, help is the answer: stdout, exit 0.
		usage(stdout)
		return ExitOK
	}
	cmd, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "hostguard: unknown command %q\n\n", args[0])
		usage(stderr)
		return ExitUsage
	}
	return cmd.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hostguard <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}
