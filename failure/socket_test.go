package failure_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hostguard/hostguard/failure"
)

// shortTimeout bounds every wait on a silent peer; it is long enough not to
// fire early on a loaded machine and short enough to keep the suite fast.
const shortTimeout = 300 * time.Millisecond

// server is a TCP listener on 127.0.0.1 that hands every accepted
// connection to handle and closes everything when the test ends.
type server struct {
	ln       net.Listener
	accepted chan struct{}
	wg       sync.WaitGroup
}

func newServer(t *testing.T, handle func(net.Conn)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, accepted: make(chan struct{}, 16)}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- struct{}{}
			s.wg.Go(func() { handle(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *server) url() string { return "http://" + s.ln.Addr().String() + "/" }

// silent holds a connection open without ever answering until the client
// goes away.
func silent(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 1024)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// resetAfterRequest reads the request head and then aborts the connection
// with an RST (SO_LINGER 0) instead of answering.
func resetAfterRequest(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			break
		}
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
}

// client returns an HTTP client with its own transport, closed at the end
// of the test so no connection goroutine outlives it.
func client(t *testing.T, timeout time.Duration) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

func get(t *testing.T, c *http.Client, ctx context.Context, url string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s answered %s; want an error", url, resp.Status)
	}
	return err
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func wantClass(t *testing.T, err error, want failure.Class) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error; want one of class %v", want)
	}
	if got := failure.Classify(err); got != want {
		t.Errorf("Classify(%v) = %v (%T), want %v", err, got, err, want)
	}
}

func TestSocketRefused(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	t.Run("dial", func(t *testing.T) {
		_, err := net.DialTimeout("tcp", addr, shortTimeout)
		wantClass(t, err, failure.Refused)
	})
	t.Run("http", func(t *testing.T) {
		wantClass(t, get(t, client(t, 0), context.Background(), "http://"+addr+"/"), failure.Refused)
	})
}

func TestSocketSilentTimeout(t *testing.T) {
	t.Parallel()
	srv := newServer(t, silent)
	t.Run("client timeout", func(t *testing.T) {
		wantClass(t, get(t, client(t, shortTimeout), context.Background(), srv.url()), failure.Timeout)
	})
	t.Run("context deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), shortTimeout)
		defer cancel()
		wantClass(t, get(t, client(t, 0), ctx, srv.url()), failure.Timeout)
	})
	t.Run("read deadline", func(t *testing.T) {
		c, err := net.Dial("tcp", srv.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(shortTimeout))
		_, err = c.Read(make([]byte, 1))
		wantClass(t, err, failure.Timeout)
	})
}

func TestSocketReset(t *testing.T) {
	t.Parallel()
	srv := newServer(t, resetAfterRequest)
	t.Run("read", func(t *testing.T) {
		c, err := net.Dial("tcp", srv.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		wantClass(t, err, failure.Reset)
	})
	t.Run("http", func(t *testing.T) {
		wantClass(t, get(t, client(t, 5*time.Second), context.Background(), srv.url()), failure.Reset)
	})
}

func TestSocketCanceled(t *testing.T) {
	t.Parallel()
	t.Run("while waiting for the answer", func(t *testing.T) {
		srv := newServer(t, silent)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-srv.accepted
			cancel()
		}()
		wantClass(t, get(t, client(t, 5*time.Second), ctx, srv.url()), failure.Canceled)
	})
	t.Run("before dialing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var d net.Dialer
		_, err := d.DialContext(ctx, "tcp", closedPort(t))
		wantClass(t, err, failure.Canceled)
	})
}

func TestSocketTLS(t *testing.T) {
	t.Parallel()
	t.Run("untrusted certificate", func(t *testing.T) {
		ts := httptest.NewTLSServer(http.NotFoundHandler())
		defer ts.Close()
		ts.Config.ErrorLog = quietLog()
		wantClass(t, get(t, client(t, 5*time.Second), context.Background(), ts.URL), failure.TLS)
	})
	t.Run("plain HTTP answers https", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		defer ts.Close()
		u := "https://" + ts.Listener.Addr().String() + "/"
		wantClass(t, get(t, client(t, 5*time.Second), context.Background(), u), failure.TLS)
	})
	t.Run("garbage instead of a handshake", func(t *testing.T) {
		srv := newServer(t, func(c net.Conn) {
			c.Write([]byte("\x00\x01\x02\x03\x04 not tls\n"))
			silent(c)
		})
		c, err := net.Dial("tcp", srv.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "x.test"})
		defer tc.Close()
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		wantClass(t, tc.Handshake(), failure.TLS)
	})
	t.Run("server requires a client certificate", func(t *testing.T) {
		ts := httptest.NewUnstartedServer(http.NotFoundHandler())
		ts.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
		ts.Config.ErrorLog = quietLog()
		ts.StartTLS()
		defer ts.Close()
		c := ts.Client()
		c.Timeout = 5 * time.Second
		defer c.CloseIdleConnections()
		resp, err := c.Get(ts.URL)
		if err == nil {
			resp.Body.Close()
			t.Fatal("server without the client certificate answered")
		}
		wantClass(t, err, failure.TLS)
	})
}
