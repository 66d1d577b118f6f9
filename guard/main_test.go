package guard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The concurrency tests start goroutines; none may outlive the run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
