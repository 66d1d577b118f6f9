// Command retrybench loads a retry scheduler with many items (most of them
// waiting far in the future, as in a crawler's backlog) and measures what
// matters at that scale: Add throughput, claim→succeed and claim→fail
// cycles with several workers claiming in batches, Observe throughput,
// claim latency, Stats latency and bytes on disk per item, and (phase
// retention) claim latency while retention deletes done items.
//
//	go run ./cmd/retrybench -db /tmp/retry.db -n 1000000
//	go run ./cmd/retrybench -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=hgbench' -workers 8
//
// It prints one Markdown table; docs/benchmarks.md records the figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "retrybench:", err)
		os.Exit(1)
	}
}
