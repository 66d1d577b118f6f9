package failure_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The socket tests start servers and HTTP transports; none may outlive a test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
