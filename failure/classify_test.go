package failure_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/hostguard/hostguard/failure"
)

// timeoutErr is a third-party error that reports a timeout only through
// its Timeout method.
type timeoutErr struct{}

func (timeoutErr) Error() string { return "slow" }
func (timeoutErr) Timeout() bool { return true }

func opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)}
}

func urlErr(err error) error {
	return &url.Error{Op: "Get", URL: "http://user:secret@example.test/?k=v", Err: err}
}

func TestClassifyConstructed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want failure.Class
	}{
		{"nil", nil, failure.None},
		{"refused", opErr("dial", syscall.ECONNREFUSED), failure.Refused},
		{"refused in url.Error", urlErr(opErr("dial", syscall.ECONNREFUSED)), failure.Refused},
		{"host unreachable", opErr("dial", syscall.EHOSTUNREACH), failure.HostUnreachable},
		{"network unreachable", opErr("dial", syscall.ENETUNREACH), failure.NetworkUnreachable},
		{"aborted", opErr("read", syscall.ECONNABORTED), failure.Aborted},
		{"reset", opErr("read", syscall.ECONNRESET), failure.Reset},
		{"broken pipe", opErr("write", syscall.EPIPE), failure.Reset},
		{"etimedout errno", opErr("dial", syscall.ETIMEDOUT), failure.Timeout},
		{"other errno", opErr("dial", syscall.EACCES), failure.Unknown},
		{"dns not found", &net.DNSError{Err: "no such host", Name: "x.test", IsNotFound: true}, failure.DNSNotFound},
		{"dns temporary", &net.DNSError{Err: "server misbehaving", Name: "x.test", IsTemporary: true}, failure.DNSTemporary},
		{"dns timeout", &net.DNSError{Err: "i/o timeout", Name: "x.test", IsTimeout: true}, failure.DNSTemporary},
		{"dns other", &net.DNSError{Err: "no answer", Name: "x.test"}, failure.Unknown},
		{"dns in op in url", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{IsNotFound: true}}), failure.DNSNotFound},
		{"deadline exceeded", context.DeadlineExceeded, failure.Timeout},
		{"wrapped deadline", fmt.Errorf("fetch: %w", context.DeadlineExceeded), failure.Timeout},
		{"os deadline", opErr("read", os.ErrDeadlineExceeded), failure.Timeout},
		{"Timeout() method", timeoutErr{}, failure.Timeout},
		// url.Error forwards Timeout only to its direct cause; the chain walk
		// must still find one wrapped deeper.
		{"timeout behind a wrapper in url.Error", urlErr(fmt.Errorf("dial: %w", timeoutErr{})), failure.Timeout},
		{"timeout in a join", errors.Join(io.EOF, timeoutErr{}), failure.Timeout},
		{"canceled", context.Canceled, failure.Canceled},
		{"canceled in url.Error", urlErr(context.Canceled), failure.Canceled},
		{"canceled wins over timeout", errors.Join(context.DeadlineExceeded, context.Canceled), failure.Canceled},
		{"canceled wins over refused", errors.Join(opErr("dial", syscall.ECONNREFUSED), context.Canceled), failure.Canceled},
		{"policy", &failure.PolicyError{Reason: "private address"}, failure.Policy},
		{"policy sentinel", fmt.Errorf("proxy: %w", failure.ErrPolicy), failure.Policy},
		{"policy wins over canceled and refused", &failure.PolicyError{Err: errors.Join(context.Canceled, syscall.ECONNREFUSED)}, failure.Policy},
		{"record header", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, failure.TLS},
		{"record header pointer", &tls.RecordHeaderError{}, failure.TLS},
		{"alert", tls.AlertError(40), failure.TLS},
		{"unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), failure.TLS},
		{"hostname", x509.HostnameError{Host: "a.test"}, failure.TLS},
		{"tls wins over timeout", errors.Join(timeoutErr{}, &tls.RecordHeaderError{}), failure.TLS},
		{"remote alert", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, failure.TLS},
		{"EOF", io.EOF, failure.Unknown},
		{"plain", errors.New("boom"), failure.Unknown},
		// Message text is never evidence.
		{"message ETIMEDOUT", errors.New("ETIMEDOUT"), failure.Unknown},
		{"message refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), failure.Unknown},
		{"message canceled", errors.New("context canceled"), failure.Unknown},
		{"message timeout in url.Error", urlErr(errors.New("i/o timeout")), failure.Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := failure.Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestPolicyError(t *testing.T) {
	t.Parallel()
	cause := errors.New("resolves to 10.0.0.1")
	err := error(&failure.PolicyError{Reason: "private destination", Err: cause})
	if !errors.Is(err, failure.ErrPolicy) {
		t.Error("PolicyError is not ErrPolicy")
	}
	if !errors.Is(err, cause) {
		t.Error("PolicyError does not unwrap to its cause")
	}
	if got, want := err.Error(), "failure: refused by policy: private destination: resolves to 10.0.0.1"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&failure.PolicyError{}).Error(), "failure: refused by policy"; got != want {
		t.Errorf("empty PolicyError.Error() = %q, want %q", got, want)
	}
}
