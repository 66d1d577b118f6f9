package upstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/faulthost"
)

// phases records what the pool reported of a request.
type phases struct{ got, wrote int }

func (p *phases) GotConn(httptrace.GotConnInfo)           { p.got++ }
func (p *phases) WroteRequest(httptrace.WroteRequestInfo) { p.wrote++ }

// newPool is a pool as the daemon builds it, over a plain dialer; its
// connections are closed when the test ends.
func newPool(t *testing.T) *Pool {
	t.Helper()
	base := &http.Transport{Proxy: nil}
	d := &net.Dialer{Timeout: 5 * time.Second}
	p := New(base, d.DialContext, time.Minute, 8)
	t.Cleanup(func() { p.CloseIdle(true) })
	return p
}

// send sends one bodyless request and reads its answer whole.
func send(t *testing.T, p *Pool, method, rawURL string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ph := &phases{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, direct, err := p.Send(ctx, req, ph)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if !direct || ph.got == 0 || ph.wrote == 0 {
		t.Fatalf("%s %s: direct %v, phases %+v: the pool did not send it itself", method, rawURL, direct, *ph)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, rawURL, err)
	}
	return resp.StatusCode, string(b), nil
}

func TestPoolConnectionIsReused(t *testing.T) {
	t.Parallel()
	up := faulthost.NewScripted(t, func(s *faulthost.Scripted, n int, c net.Conn, br *bufio.Reader) {
		for {
			req, ok := s.Read(n, br)
			if !ok {
				return
			}
			if req.Method == http.MethodHead {
				// A length that HEAD's answer never carries.
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
				continue
			}
			faulthost.AnswerOK(c, "hello")
		}
	})
	p := newPool(t)
	for _, m := range []string{"GET", "HEAD", "GET", "DELETE"} {
		code, body, err := send(t, p, m, up.URL()+"/"+strings.ToLower(m))
		if want := map[bool]string{true: "", false: "hello"}[m == "HEAD"]; err != nil || code != 200 || body != want {
			t.Fatalf("%s: %d %q %v", m, code, body, err)
		}
	}
	if got, want := up.Seen(), "0:GET /get 0:HEAD /head 0:GET /get 0:DELETE /delete"; got != want {
		t.Fatalf("upstream saw %q, want %q (one connection for all)", got, want)
	}
}

func TestPoolReadToCloseIsNotReused(t *testing.T) {
	t.Parallel()
	up := faulthost.NewScripted(t, func(s *faulthost.Scripted, n int, c net.Conn, br *bufio.Reader) {
		if _, ok := s.Read(n, br); ok {
			// No length: the body ends with the connection.
			io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nuntil close")
		}
	})
	p := newPool(t)
	for range 2 {
		if code, body, err := send(t, p, "GET", up.URL()+"/x"); err != nil || code != 200 || body != "until close" {
			t.Fatalf("answer %d %q %v", code, body, err)
		}
	}
	if got, want := up.Seen(), "0:GET /x 1:GET /x"; got != want {
		t.Fatalf("upstream saw %q, want %q", got, want)
	}
}

// TestPoolNonReplayableIsNotRetried: a bodyless POST is never sent twice.
// A pooled connection that the upstream closed while idle is not used
// for it; one that breaks after the upstream heard it is an error.
func TestPoolNonReplayableIsNotRetried(t *testing.T) {
	t.Parallel()
	t.Run("closed while idle", func(t *testing.T) {
		t.Parallel()
		closed := make(chan struct{})
		up := faulthost.NewScripted(t, func(s *faulthost.Scripted, n int, c net.Conn, br *bufio.Reader) {
			if _, ok := s.Read(n, br); ok {
				faulthost.AnswerOK(c, fmt.Sprint("answer ", n))
			}
			if n == 0 {
				c.Close()
				close(closed)
			}
		})
		p := newPool(t)
		if code, _, err := send(t, p, "GET", up.URL()+"/1"); err != nil || code != 200 {
			t.Fatalf("first: %d %v", code, err)
		}
		<-closed
		if code, body, err := send(t, p, "POST", up.URL()+"/2"); err != nil || code != 200 || body != "answer 1" {
			t.Fatalf("POST: %d %q %v", code, body, err)
		}
		if got, want := up.Seen(), "0:GET /1 1:POST /2"; got != want {
			t.Fatalf("upstream saw %q, want %q", got, want)
		}
	})
	t.Run("closed on hearing it", func(t *testing.T) {
		t.Parallel()
		up := faulthost.NewScripted(t, func(s *faulthost.Scripted, n int, c net.Conn, br *bufio.Reader) {
			if _, ok := s.Read(n, br); ok {
				faulthost.AnswerOK(c, "first")
			}
			s.Read(n, br)
		})
		p := newPool(t)
		if code, _, err := send(t, p, "GET", up.URL()+"/1"); err != nil || code != 200 {
			t.Fatalf("first: %d %v", code, err)
		}
		if _, _, err := send(t, p, "POST", up.URL()+"/2"); err == nil {
			t.Fatal("POST on a connection that broke: no error")
		}
		if got, want := up.Seen(), "0:GET /1 0:POST /2"; got != want {
			t.Fatalf("upstream saw %q, want %q (sent once)", got, want)
		}
	})
}
