// Command queuebench compares hostguard's retry scheduler with River on the
// same PostgreSQL server and on SQLite, and prints Markdown tables.
//
//	go run ./cmd/queuebench -pg postgres://postgres@127.0.0.1:5432/postgres -runs 3
//
// Burn-down: n no-op items added, then all claimed and succeeded; runs
// alternate between the systems, each on a freshly created database
// (hgbench_hg and hgbench_river on PostgreSQL, new files on SQLite), and
// the report gives the median of the runs. Backlog: a million items due in
// a month, a trickle of due items (claim latency and due-to-claimed lag),
// then a burst of reactivations.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
