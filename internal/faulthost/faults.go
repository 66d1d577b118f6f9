package faulthost

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// StallSent and StallDeclared describe the body StallsMidBody sends: it
// declares StallDeclared bytes and delivers only the first StallSent.
const (
	StallSent     = 512
	StallDeclared = 1024
)

// Body returns the first n bytes of the body every body-sending host
// delivers: a repeating a–z pattern, so a test can check what arrived.
func Body(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// NeverAnswers returns a host that accepts connections and reads requests but
// never answers; it holds each connection until Close.
func NeverAnswers() *Host {
	return start(func(h *Host, _ net.Conn, _ *http.Request) bool {
		<-h.done
		return false
	})
}

// ClosedPort returns the address of a port on 127.0.0.1 that nothing listens
// on, so connecting is refused. It finds one by listening and closing at
// once; another process could take the port in between, which is unlikely
// enough for tests. Its counts are always zero.
func ClosedPort() *Host {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("faulthost: listen on 127.0.0.1:0: %v", err))
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		panic(fmt.Sprintf("faulthost: close %s: %v", addr, err))
	}
	return newHost(addr)
}

// Resets returns a host that reads each request and then resets the
// connection (an RST, through SO_LINGER 0) instead of answering.
func Resets() *Host {
	return start(func(_ *Host, c net.Conn, _ *http.Request) bool {
		if tc, ok := c.(*net.TCPConn); ok {
			// The deferred close in serve now sends RST rather than FIN.
			_ = tc.SetLinger(0)
		}
		return false
	})
}

// Status returns a host that answers every request with code and a short
// text body. code must lie in 200–599: an interim 1xx would leave clients
// waiting for a final answer that never comes.
func Status(code int) *Host {
	if code < 200 || code > 599 {
		panic(fmt.Sprintf("faulthost: status %d outside 200-599", code))
	}
	return start(func(_ *Host, c net.Conn, req *http.Request) bool {
		body := []byte(http.StatusText(code) + "\n")
		if code == http.StatusNoContent || code == http.StatusNotModified {
			body = nil
		}
		return writeResponse(c, req, code, nil, body) == nil
	})
}

// Gated returns a host that holds every request until Release is called and
// then answers it, and every later request, with code (200–599).
func Gated(code int) *Host {
	if code < 200 || code > 599 {
		panic(fmt.Sprintf("faulthost: status %d outside 200-599", code))
	}
	return start(func(h *Host, c net.Conn, req *http.Request) bool {
		select {
		case <-h.release:
		case <-h.done:
			return false
		}
		return writeResponse(c, req, code, nil, []byte(http.StatusText(code)+"\n")) == nil
	})
}

// Redirect returns a host that answers every request with 302 Found pointing
// at to, which must be an absolute URL.
func Redirect(to string) *Host {
	u, err := url.Parse(to)
	if err != nil || !u.IsAbs() {
		panic(fmt.Sprintf("faulthost: redirect target %q is not an absolute URL", to))
	}
	return start(func(_ *Host, c net.Conn, req *http.Request) bool {
		return writeResponse(c, req, http.StatusFound, http.Header{"Location": {to}}, nil) == nil
	})
}

// StallsMidBody returns a host that answers 200 with a body declared as
// StallDeclared bytes, sends the first StallSent of them and then goes silent,
// holding the connection until Close.
func StallsMidBody() *Host {
	return start(func(h *Host, c net.Conn, _ *http.Request) bool {
		if err := writeHead(c, http.StatusOK, nil, StallDeclared); err != nil {
			return false
		}
		if _, err := c.Write(Body(StallSent)); err != nil {
			return false
		}
		<-h.done
		return false
	})
}

// Trickle returns a host that answers 200 with a body of total bytes sent in
// pieces of chunk bytes, gap apart: the first piece goes with the headers.
// chunk and total must be positive and gap not negative.
func Trickle(chunk int, gap time.Duration, total int) *Host {
	if chunk <= 0 || total <= 0 || gap < 0 {
		panic(fmt.Sprintf("faulthost: Trickle(chunk %d, gap %v, total %d) needs chunk > 0, gap >= 0, total > 0", chunk, gap, total))
	}
	body := Body(total)
	return start(func(h *Host, c net.Conn, req *http.Request) bool {
		if err := writeHead(c, http.StatusOK, nil, total); err != nil {
			return false
		}
		if req.Method == http.MethodHead {
			return true
		}
		timer := time.NewTimer(gap)
		defer timer.Stop()
		for sent := 0; sent < total; {
			if sent > 0 {
				timer.Reset(gap)
				select {
				case <-timer.C:
				case <-h.done:
					return false
				}
			}
			n := min(chunk, total-sent)
			if _, err := c.Write(body[sent : sent+n]); err != nil {
				return false
			}
			sent += n
		}
		return true
	})
}

// writeResponse writes a complete response, leaving the body out for HEAD.
func writeResponse(c net.Conn, req *http.Request, code int, hdr http.Header, body []byte) error {
	length := len(body)
	if code == http.StatusNoContent || code == http.StatusNotModified {
		length = -1
	}
	if err := writeHead(c, code, hdr, length); err != nil {
		return err
	}
	if req.Method == http.MethodHead || len(body) == 0 {
		return nil
	}
	_, err := c.Write(body)
	return err
}

// writeHead writes the status line and headers in one write; a negative
// length sends no Content-Length, as 204 and 304 require.
func writeHead(c net.Conn, code int, hdr http.Header, length int) error {
	h := hdr.Clone()
	if h == nil {
		h = http.Header{}
	}
	if length >= 0 {
		h.Set("Content-Length", strconv.Itoa(length))
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	if err := h.Write(&buf); err != nil {
		return err
	}
	buf.WriteString("\r\n")
	_, err := c.Write(buf.Bytes())
	return err
}
