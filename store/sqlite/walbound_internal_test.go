package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry/retrydriver"
)

// TestWALStaysBoundedUnderSustainedWrites writes 16 MiB of items through
// two writers while two readers keep reading: the WAL must stay within a
// few times its bound, not grow with everything written.
func TestWALStaysBoundedUnderSustainedWrites(t *testing.T) {
	const boundPages = 256 // 1 MiB
	old := walBoundPages.Swap(boundPages)
	t.Cleanup(func() { walBoundPages.Store(old) })
	path := filepath.Join(t.TempDir(), "wal.db")
	ctx := context.Background()
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	const writers, perWriter, payload = 2, 1000, 8 << 10 // 16 MiB in all
	body := []byte(`"` + strings.Repeat("x", payload) + `"`)
	var maxWAL int64
	var mu sync.Mutex
	watch := func() {
		if fi, err := os.Stat(path + "-wal"); err == nil {
			mu.Lock()
			maxWAL = max(maxWAL, fi.Size())
			mu.Unlock()
		}
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = st.RetryGet(ctx, retrydriver.GetParams{ID: fmt.Sprintf("w%d-%d", r, i%perWriter)})
			}
		})
	}
	var ws sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		ws.Go(func() {
			for i := range perWriter {
				now := time.Now()
				_, err := st.RetryAdd(ctx, retrydriver.AddParams{Now: now, Items: []retrydriver.NewItem{{ID: fmt.Sprintf("w%d-%d", w, i), Payload: body, NotBefore: now}}})
				if err != nil {
					errs <- err
					return
				}
				watch()
			}
		})
	}
	ws.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const limit = 8 << 20
	t.Logf("largest WAL seen: %.1f MiB (bound %d pages; 16 MiB written)", float64(maxWAL)/(1<<20), boundPages)
	if maxWAL > limit {
		t.Fatalf("the WAL reached %.1f MiB under sustained writes; want at most %d MiB", float64(maxWAL)/(1<<20), limit>>20)
	}
}
