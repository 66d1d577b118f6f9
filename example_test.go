package hostguard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hostguard/hostguard"
	"github.com/hostguard/hostguard/retry"
)

// Open one store and hand it to the capabilities that need durability.
// The same code runs against PostgreSQL with a postgres:// dsn.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "hostguard-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := hostguard.Open(ctx, filepath.Join(dir, "hostguard.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	sched, err := retry.New(st, retry.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := sched.Add(ctx, retry.NewItem{ID: "infohash-1"})
	fmt.Println("added", res.Added)

	_, err = hostguard.Open(ctx, "mysql://root@db/hostguard")
	fmt.Println(err)
	// Output:
	// added 1
	// hostguard: unsupported store scheme "mysql"; accepted forms: a file path or sqlite:PATH (embedded SQLite), postgres://user@host:port/db (PostgreSQL)
}
