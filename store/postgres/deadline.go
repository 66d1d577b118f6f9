package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 5 * time.Second

// Config tunes a Store. The zero Config is the defaults.
type Config struct {
	// Timeout bounds each statement the store sends, and each new
	// connection: past it, the statement fails with
	// context.DeadlineExceeded (the daemon answers 503 with
	// Retry-After) and its connection is closed, so an open transaction
	// is rolled back by the server (a single statement the server is
	// still running, behind a lock say, may yet finish, whole: the
	// server learns of the closed connection only when it answers).
	// Without it, a network that drops
	// packets leaves every call waiting until TCP gives up, which can
	// take a quarter of an hour. It does not bound the wait of a claim
	// for new work, which listens between statements. Default
	// DefaultTimeout; zero means the default, negative none. A statement
	// cut at its commit may or may not have committed, as with any
	// connection lost then.
	Timeout time.Duration
}

func (c Config) timeout() time.Duration {
	switch {
	case c.Timeout < 0:
		return 0
	case c.Timeout == 0:
		return DefaultTimeout
	}
	return c.Timeout
}

// deadlines gives every statement pgx runs a context bounded by d, once
// armed: the migrations before it wait on an advisory lock for as long as
// another node migrates, and a long migration is not an outage.
type deadlines struct {
	d     time.Duration
	armed atomic.Bool
}

type cancelKey struct{}

func (t *deadlines) start(ctx context.Context) context.Context {
	if t.d <= 0 || !t.armed.Load() {
		return ctx
	}
	ctx, cancel := context.WithTimeoutCause(ctx, t.d, errTimedOut)
	return context.WithValue(ctx, cancelKey{}, cancel)
}

func (t *deadlines) end(ctx context.Context) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

// errTimedOut is the cause of a statement's deadline; it wraps
// context.DeadlineExceeded, which is what callers test.
var errTimedOut = &timeoutError{}

type timeoutError struct{}

func (*timeoutError) Error() string { return "postgres: no answer within the store timeout" }
func (*timeoutError) Unwrap() error { return context.DeadlineExceeded }

func (t *deadlines) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return t.start(ctx)
}
func (t *deadlines) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	t.end(ctx)
}
func (t *deadlines) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return t.start(ctx)
}
func (t *deadlines) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (t *deadlines) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	t.end(ctx)
}
func (t *deadlines) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return t.start(ctx)
}
func (t *deadlines) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareEndData) {
	t.end(ctx)
}
func (t *deadlines) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return t.start(ctx)
}
func (t *deadlines) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	t.end(ctx)
}
