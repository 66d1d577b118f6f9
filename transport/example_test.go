package transport_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hostguard/hostguard/failure"
	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/internal/faulthost"
	"github.com/hostguard/hostguard/transport"
)

// A client whose requests to a dead host stop costing anything after the
// guard has seen it fail twice.
func Example() {
	dead := faulthost.ClosedPort() // a port on 127.0.0.1 that refuses
	client := &http.Client{Transport: transport.New(transport.Config{
		Logger: slog.New(slog.DiscardHandler),
	})}

	for i := 1; i <= 3; i++ {
		_, err := client.Get(dead.URL() + "/feed.xml")
		var open *guard.OpenError
		switch {
		case errors.As(err, &open):
			// RetryAfter says when the guard will let a trial through.
			fmt.Printf("request %d: skipped, ErrOpen %v, retry later %v\n",
				i, errors.Is(err, guard.ErrOpen), open.RetryAfter > 0)
		case err != nil:
			fmt.Printf("request %d: failed\n", i)
		}
	}
	// Output:
	// request 1: failed
	// request 2: failed
	// request 3: skipped, ErrOpen true, retry later true
}

// ProbeFunc is what a guard's Probe wants: any status is an answer, a host
// that refuses is not.
func ExampleProbeFunc() {
	probe := transport.ProbeFunc(nil, time.Second)
	missing := faulthost.Status(http.StatusNotFound)
	defer missing.Close()
	dead := faulthost.ClosedPort()
	defer dead.Close()

	fmt.Println("404 is an answer:", probe(context.Background(), missing.URL()) == nil)
	err := probe(context.Background(), dead.URL())
	fmt.Println("refused is host-level:", failure.Classify(err).HostLevel())

	// A guard that probes through the same base as its transport:
	g := guard.New(guard.Config{Probe: probe})
	defer g.Close()
	// Output:
	// 404 is an answer: true
	// refused is host-level: true
}
