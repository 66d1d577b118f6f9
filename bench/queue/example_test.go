package queue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hostguard/hostguard/bench/queue"
)

func ExampleHostguardCycle() {
	dir, err := os.MkdirTemp("", "queue-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c, err := queue.HostguardCycle(context.Background(), filepath.Join(dir, "hg.db"), queue.CycleOptions{N: 500, Workers: 2, ClaimBatch: 50})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.System, "worked", c.N, "items; rates positive:", c.AddRate() > 0 && c.WorkRate() > 0)
	// Output: hostguard worked 500 items; rates positive: true
}
