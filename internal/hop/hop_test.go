package hop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/hostguard/hostguard/guard"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// refusing is a Sender whose requests end the way its test says, after
// its context ends or at once.
type refusing struct {
	wait bool  // return only once the context is done
	err  error // what to return
}

func (s refusing) Send(ctx context.Context, _ *http.Request, _ Phases) (*http.Response, bool, error) {
	if s.wait {
		<-ctx.Done()
	}
	return nil, true, s.err
}

func (refusing) Pooled() bool { return false }

// TestFailedRules drives how a request that got no answer settles its
// ticket: which ends count against the endpoint (two in a row open it)
// and which say nothing.
func TestFailedRules(t *testing.T) {
	t.Parallel()
	past := func() (context.Context, context.CancelFunc) {
		// A deadline that has passed, cancelled explicitly as net/http's
		// client timer does, before the context's own timer noticed.
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		return &pastDeadline{ctx}, cancel
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	const judges = time.Nanosecond // a floor every give-up passes
	cases := []struct {
		name  string
		floor time.Duration // guard.Config.WaitFloor; 0: the default
		rules Rules
		ctx   func() (context.Context, context.CancelFunc)
		send  refusing
		open  bool // two such requests open the endpoint
		wait  bool // the error is a *guard.WaitError
	}{
		{"a refusal counts", 0, Rules{Timeout: time.Minute}, bg, refusing{err: syscall.ECONNREFUSED}, true, false},
		{"the operator's timeout counts under any floor", 0, Rules{Timeout: time.Millisecond}, bg, refusing{wait: true, err: context.Canceled}, true, false},
		{"a chosen timeout under the floor says nothing", 0, Rules{Timeout: time.Millisecond, Chosen: true}, bg, refusing{wait: true, err: context.Canceled}, false, true},
		{"a chosen timeout over the floor counts", judges, Rules{Timeout: time.Millisecond, Chosen: true}, bg, refusing{wait: true, err: context.Canceled}, true, true},
		{"an explicit cancellation says nothing", judges, Rules{Timeout: time.Minute}, cancelled, refusing{err: context.Canceled}, false, false},
		{"a client that left is a give-up", judges, Rules{Timeout: time.Minute, Left: true}, cancelled, refusing{err: context.Canceled}, true, true},
		{"a deadline the client's timer beat is the deadline", judges, Rules{Timeout: time.Minute}, past, refusing{err: errors.New("net/http: request canceled")}, true, true},
		{"a shutdown says nothing", judges, Rules{Timeout: time.Minute, Left: true, Stopping: stopped}, cancelled, refusing{err: context.Canceled}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := guard.New(guard.Config{WaitFloor: tc.floor, Disabled: func() bool { return false }})
			const u = "http://a.test"
			for i := range 2 {
				tk, err := g.Acquire(u)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				ctx, cancel := tc.ctx()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/", nil)
				_, err = RoundTrip(ctx, req, tk, tc.rules, tc.send)
				cancel()
				tk.Release()
				if _, ok := errors.AsType[*guard.WaitError](err); ok != tc.wait {
					t.Fatalf("request %d: %v; a WaitError: %v, want %v", i, err, ok, tc.wait)
				}
			}
			if got := g.State(u) == guard.Open; got != tc.open {
				t.Fatalf("open after two: %v, want %v", got, tc.open)
			}
		})
	}
}

// TestTimeoutOwedFor dates a header timeout from when its request was
// sent, and a stalled body not at all: its wait began after the answer.
func TestTimeoutOwedFor(t *testing.T) {
	var o interface{ OwedFor() time.Duration }
	if !errors.As(fmt.Errorf("get: %w", &TimeoutError{After: 3 * time.Second}), &o) || o.OwedFor() != 3*time.Second {
		t.Errorf("header timeout: OwedFor not found or not After")
	}
	if got := (&TimeoutError{Body: true, After: time.Second}).OwedFor(); got != 0 {
		t.Errorf("stalled body: OwedFor = %v, want 0", got)
	}
}

func bg() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }

func cancelled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}

// pastDeadline is a cancelled context whose deadline reads as passed.
type pastDeadline struct{ context.Context }

func (p *pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (p *pastDeadline) Err() error                  { return nil }
