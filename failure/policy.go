package failure

import "errors"

// ErrPolicy marks a request that was refused locally, for example because
// its destination is not allowed (SSRF protection). Classify maps any error
// that wraps it to Policy. Most callers return a *PolicyError instead, which
// carries the reason.
var ErrPolicy = errors.New("failure: refused by policy")

// PolicyError is a local policy refusal with a reason. It never reached the
// network, so it says nothing about the host. The reason is shown in the
// message: keep credentials and query strings out of it.
type PolicyError struct {
	Reason string // what the policy refused, e.g. "destination is a private address"
	Err    error  // optional cause
}

func (e *PolicyError) Error() string {
	msg := "failure: refused by policy"
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the optional cause.
func (e *PolicyError) Unwrap() error { return e.Err }

// Is reports whether target is ErrPolicy, so errors.Is(err, ErrPolicy) holds
// for every PolicyError.
func (e *PolicyError) Is(target error) bool { return target == ErrPolicy }
