// Package fault lets the conformance suite make an engine's multi-step
// transaction fail after its last step, so that it can prove the steps
// before it are not committed either. Production callers never set it;
// an engine only looks it up on the paths that promise atomicity.
package fault

import "context"

type key struct{}

// WithAfterLast returns a context under which an engine that honours it
// fails a multi-step transaction with err once every step has run, before
// the commit.
func WithAfterLast(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, key{}, err)
}

// AfterLast returns the error set by WithAfterLast, or nil.
func AfterLast(ctx context.Context) error {
	err, _ := ctx.Value(key{}).(error)
	return err
}
