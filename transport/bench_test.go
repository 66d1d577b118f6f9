package transport_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hostguard/hostguard/guard"
	"github.com/hostguard/hostguard/transport"
)

// BenchmarkTransport measures one loopback round trip through the bare base
// transport and through hostguard's transport wrapping that same base, in
// one run against one server, so the difference is what the guard adds.
func BenchmarkTransport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	defer srv.Close()
	base := &http.Transport{MaxIdleConnsPerHost: 4}
	defer base.CloseIdleConnections()
	guarded := transport.New(transport.Config{Base: base, Guard: guard.New(guard.Config{})})

	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"base", base},
		{"hostguard", guarded},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/item?id=1", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := bc.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkTransportOverhead isolates what the guarded transport adds by
// wrapping a base that answers from memory, so network noise on a loaded
// machine does not drown the difference.
func BenchmarkTransportOverhead(b *testing.B) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: http.StatusOK,
			Body:       io.NopCloser(strings.NewReader("ok\n")),
			Request:    r,
		}, nil
	})
	guarded := transport.New(transport.Config{Base: base, Guard: guard.New(guard.Config{})})
	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"base", base},
		{"hostguard", guarded},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9/item?id=1", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := bc.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}
