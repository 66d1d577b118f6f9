package faulthost

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Scripted is an upstream whose every connection runs a script, given the
// connection's number (from 0): a test writes byte for byte what the host
// answers and when it closes, and reads back the requests that arrived.
type Scripted struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	reqs  []string // "conn:method path" in arrival order
	wg    sync.WaitGroup
}

// NewScripted starts a Scripted host on 127.0.0.1; it closes, with every
// connection, when the test ends.
func NewScripted(t testing.TB, script func(s *Scripted, n int, c net.Conn, br *bufio.Reader)) *Scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("faulthost: listen on 127.0.0.1:0: %v", err))
	}
	s := &Scripted{ln: ln}
	s.wg.Go(func() {
		for n := 0; ; n++ {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				defer c.Close()
				script(s, n, c, bufio.NewReader(c))
			})
		}
	})
	t.Cleanup(func() {
		s.ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// URL is the host's http:// origin.
func (s *Scripted) URL() string { return "http://" + s.ln.Addr().String() }

// Read reads one request on connection n, drains its body and notes it;
// false at the end of the connection.
func (s *Scripted) Read(n int, br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, fmt.Sprintf("%d:%s %s", n, req.Method, req.URL.Path))
	s.mu.Unlock()
	return req, true
}

// Seen lists the requests read so far, "conn:method path" separated by
// spaces, in arrival order.
func (s *Scripted) Seen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, " ")
}

// AnswerOK writes a 200 with body on c.
func AnswerOK(c net.Conn, body string) {
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}
