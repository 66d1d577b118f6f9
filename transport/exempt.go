package transport

import "context"

// exemptKey marks an exempt context. Its zero size means storing and looking
// it up in a context does not allocate.
type exemptKey struct{}

// Exempt returns a copy of ctx under which requests take exempt guard
// tickets: they are never refused, their failures never count against the
// endpoint, and an answer still clears the endpoint's record. It suits
// discovery walks that expect most of their probes to fail.
func Exempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, exemptKey{}, true)
}

func isExempt(ctx context.Context) bool {
	return ctx.Value(exemptKey{}) != nil
}
