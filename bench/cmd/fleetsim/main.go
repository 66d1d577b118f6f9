// Command fleetsim runs hostguard and its peers through the same simulated
// fleet of hosts on 127.0.0.1 and prints a Markdown table of what each one
// cost: wall time against an oracle that knows every outage, requests sent
// to hosts that were down, time spent waiting on them, false refusals, and
// how quickly a recovered host was used again.
//
//	go run ./cmd/fleetsim -rounds 3
//
// Every duration is a multiple of -timeout, which stands for a real-world
// client timeout of 30 s: the default 300ms scales time down a hundredfold.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/hostguard/hostguard/bench/fleet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run parses args, runs the simulation and writes the report to out;
// progress goes to log.
func run(ctx context.Context, args []string, out, log io.Writer) error {
	opts, err := parseFlags(args, log)
	if err != nil {
		return err
	}
	var trace *fleet.Tracer
	if opts.trace != "" {
		f, err := os.Create(opts.trace)
		if err != nil {
			return fmt.Errorf("fleetsim: -trace: %w", err)
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		trace = fleet.NewTracer(w)
	}
	sims, err := simulate(ctx, opts, trace, log)
	if err != nil {
		return err
	}
	if err := report(out, opts, sims); err != nil {
		return err
	}
	if opts.lags != nil {
		n, p50, p99 := opts.lags.Quantiles()
		fmt.Fprintf(out, "\nSharing delay (a node's trip to another node's adoption, %d deliveries): p50 %v, p99 %v\n",
			n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
	}
	return nil
}
