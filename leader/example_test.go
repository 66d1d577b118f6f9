package leader_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hostguard/hostguard/leader"
	"github.com/hostguard/hostguard/store/sqlite"
)

func Example() {
	dir, _ := os.MkdirTemp("", "leader-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "hostguard.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	el, err := leader.New(st, leader.Config{Name: "loops", NodeID: "node-a"})
	if err != nil {
		log.Fatal(err)
	}
	// Run returns when its context ends, or, as here, when the work itself
	// is over. The work's context is cancelled if leadership is lost.
	err = el.Run(context.Background(), func(ctx context.Context) error {
		term, _ := leader.TermFromContext(ctx)
		fmt.Println("leading in term", term, "as", el.NodeID())
		return nil
	})
	fmt.Println("done:", err, "leading:", el.Leading())
	// Output:
	// leading in term 1 as node-a
	// done: <nil> leading: false
}
