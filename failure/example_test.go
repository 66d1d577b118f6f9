package failure_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/hostguard/hostguard/failure"
)

func ExampleClassify() {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, err := range []error{
		refused,
		fmt.Errorf("fetch feed: %w", context.DeadlineExceeded),
		context.Canceled,
		&failure.PolicyError{Reason: "destination is a private address"},
		errors.New("ETIMEDOUT"), // text is not evidence
		nil,
	} {
		c := failure.Classify(err)
		fmt.Printf("%-8s host-level=%v\n", c, c.HostLevel())
	}
	// Output:
	// refused  host-level=true
	// timeout  host-level=true
	// canceled host-level=false
	// policy   host-level=false
	// unknown  host-level=false
	// none     host-level=false
}
