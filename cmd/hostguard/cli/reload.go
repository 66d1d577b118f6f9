package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/server"
)

// serveSignals runs the daemon under process signals: the first SIGINT or
// SIGTERM starts the graceful stop, a second one during the drain exits
// at once, and SIGHUP reloads the configuration file (see reloader), so
// systemctl reload, logrotate or a closed terminal never end the daemon.
func serveSignals(sigs <-chan os.Signal, args []string, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		stopping := false
		for {
			var sig os.Signal
			select {
			case <-done:
				return
			case sig = <-sigs:
			}
			switch {
			case sig == syscall.SIGHUP:
				select {
				case hup <- struct{}{}:
				default: // one reload pending is as good as two
				}
			case stopping:
				fmt.Fprintf(stderr, "hostguard serve: second %v during the drain; exiting now\n", sig)
				os.Exit(ExitError)
			default:
				stopping = true
				cancel()
			}
		}
	}()
	return serveWith(ctx, args, stderr, hup)
}

// reloader applies a re-read configuration to a running daemon: the log
// level, the budget's sources and limits, the feeds. Every other setting that
// changed needs a restart; it is logged once and kept as it was. State
// (the guard's endpoints, tickets, tunnels) is never touched.
type reloader struct {
	args   []string
	stderr io.Writer
	log    *slog.Logger
	level  *slog.LevelVar
	budget *budget.Budget
	server *server.Server
	cur    *settings // what the daemon runs with
	warned map[string]bool
}

// reloadable are the options a reload applies.
var reloadable = map[string]bool{
	"log_level": true, "budget.total": true, "budget.validation": true, "budget.candidate": true,
	"budget.descriptor": true, "budget.bytes": true,
}

func (r *reloader) reload(ctx context.Context) {
	next, code, stop := parseServe(r.args, r.stderr)
	if stop || code != 0 {
		// parseServe has written why (a syntax error, a bad value, a file
		// others may write) to stderr; the log line says what happens.
		r.log.Error("hostguard: reload refused: the configuration was not accepted (the reason is above); keeping the running one", "config", r.cur.config)
		return
	}
	var applied, restart []string
	for _, o := range options {
		if reflect.DeepEqual(reflect.ValueOf(o.field(r.cur)).Elem().Interface(), reflect.ValueOf(o.field(next)).Elem().Interface()) {
			continue
		}
		if !reloadable[o.name] {
			restart = append(restart, o.name)
			copyField(o, r.cur, next) // kept as it was
			continue
		}
		applied = append(applied, o.name)
	}
	if !reflect.DeepEqual(r.cur.server.Feeds, next.server.Feeds) {
		applied = append(applied, r.reloadFeeds(next)...)
	}
	if lv, err := parseLevel(next.logLevel); err == nil {
		r.level.Set(lv)
	}
	if slices.ContainsFunc(applied, func(n string) bool { return strings.HasPrefix(n, "budget.") }) {
		if err := r.budget.SetLimits(ctx, next.budget.Limits); err != nil {
			r.log.Error("hostguard: reload: the budget limits were not applied", "err", err)
			// The running limits stay, and the next reload compares
			// against them, so it tries the file's values again.
			next.budget.Limits = r.cur.budget.Limits
			applied = slices.DeleteFunc(applied, func(n string) bool { return strings.HasPrefix(n, "budget.") })
		}
	}
	applied = append(applied, r.reloadSources(next)...)
	// A reload stores nothing, so every override named here is one an
	// operator made and the file's new values do not reach.
	logOverrides(ctx, r.log, r.budget)
	var fresh []string
	for _, n := range restart {
		if !r.warned[n] {
			r.warned[n] = true
			fresh = append(fresh, n)
		}
	}
	if len(fresh) > 0 {
		r.log.Warn("hostguard: reload: these settings need a restart and keep their running values", "settings", strings.Join(fresh, ","))
	}
	r.log.Info("hostguard: configuration reloaded", "config", r.cur.config, "applied", strings.Join(applied, ","))
	r.cur = next
}

// reloadFeeds applies the configured feeds (server.SetFeeds): removed
// ones stop polling, new ones start, changed ones restart; their stored
// positions are kept. A list the server refuses changes nothing and is
// logged; next then keeps the running feeds, so the next reload compares
// against what runs.
func (r *reloader) reloadFeeds(next *settings) []string {
	if r.server == nil {
		next.server.Feeds = r.cur.server.Feeds
		return nil
	}
	added, removed, changed, err := r.server.SetFeeds(next.server.Feeds)
	if err != nil {
		r.log.Error("hostguard: reload: the feeds were not changed", "err", err)
		next.server.Feeds = r.cur.server.Feeds
		return nil
	}
	if len(added)+len(removed)+len(changed) > 0 {
		r.log.Info("hostguard: reload: feeds applied", "added", strings.Join(added, ","),
			"removed", strings.Join(removed, ","), "changed", strings.Join(changed, ","))
	}
	return []string{"feeds"}
}

// reloadSources applies the configured budget sources: a new one is added
// to the base configuration, a changed one is set (as PUT
// /v1/budget/sources does). A source gone from the file keeps running
// until a restart: removing it would fail its admissions mid-flight.
// next's sources become what runs, so a source that could not be added
// or changed is tried again by the next reload.
func (r *reloader) reloadSources(next *settings) []string {
	var applied []string
	var runs []budget.Source
	old := map[string]budget.Source{}
	for _, s := range r.cur.budget.Sources {
		old[s.Name] = s
	}
	for _, s := range next.budget.Sources {
		prev, had := old[s.Name]
		delete(old, s.Name)
		switch {
		case !had:
			if _, err := r.budget.AddBaseSource(s); err != nil {
				r.log.Error("hostguard: reload: a budget source was not added", "source", s.Name, "err", err)
				continue
			}
		case !reflect.DeepEqual(prev, s):
			// The file's values become the configured ones, not a stored
			// run-time override: stored, they would beat the file after the
			// next edit and restart, and reset-source would bring back the
			// values of the file as it was at start.
			if _, err := r.budget.ReplaceBaseSource(s); err != nil {
				r.log.Error("hostguard: reload: a budget source was not changed", "source", s.Name, "err", err)
				runs = append(runs, prev)
				continue
			}
		default:
			runs = append(runs, s)
			continue
		}
		runs = append(runs, s)
		applied = append(applied, "budget.sources."+s.Name)
	}
	for _, s := range r.cur.budget.Sources {
		if _, gone := old[s.Name]; !gone {
			continue
		}
		if !r.warned["budget.sources."+s.Name] {
			r.warned["budget.sources."+s.Name] = true
			r.log.Warn("hostguard: reload: a removed budget source keeps running until a restart", "source", s.Name)
		}
		runs = append(runs, s)
	}
	next.budget.Sources = runs
	return applied
}
