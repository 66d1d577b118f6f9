package logtest_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hostguard/hostguard/internal/logtest"
)

// TestBufferTakesConcurrentWrites is for the race detector: loggers write
// from several goroutines while the test reads, and no line is lost.
func TestBufferTakesConcurrentWrites(t *testing.T) {
	t.Parallel()
	var b logtest.Buffer
	log := slog.New(slog.NewTextHandler(&b, nil))
	const writers, lines = 4, 50
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range lines {
				log.Info("hello")
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "msg=hello\n"); n != writers*lines {
		t.Fatalf("%d lines, want %d", n, writers*lines)
	}
}
