package transport_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

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
