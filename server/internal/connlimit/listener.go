package connlimit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Listener caps the connections open at once. A connection beyond the
// cap is accepted, told 503 with Proxy-Status connection_limit_reached and
// closed, so a client learns why rather than waiting in the kernel's
// backlog; that answer is written by a bounded number of goroutines, and a
// flood beyond them is closed unanswered.
//
// With a share, one client address (an IPv6 client by its /64, which one
// host usually has whole) holds at most that many of the connections, so
// a single client cannot take every slot and shut the others out; it is
// refused the same way past its share.
type Listener struct {
	net.Listener
	max      int64 // <= 0: no cap
	share    int64 // <= 0: no share per address
	open     atomic.Int64
	refusal  chan struct{} // slots for refusals being written
	onRefuse func()

	mu     sync.Mutex
	byAddr map[netip.Prefix]int64
}

// maxRefusing bounds the goroutines answering refused connections.
const maxRefusing = 64

// addrShare is the part of the proxy's --max-conns one client address may
// hold: half. One address alone can never fill the listener, and clients
// behind one NAT, which share an address, still get half of it; a smaller
// share would protect more against one address and cut a NAT's clients
// (and a host whose clients all come over loopback) short sooner.
const addrShare = 2

// Listen caps l at max connections (<= 0: no cap); with shared, one
// client address holds at most max/addrShare of them (rounded up).
// onRefuse, if set, hears each refusal.
func Listen(l net.Listener, max int, shared bool, onRefuse func()) *Listener {
	ll := &Listener{Listener: l, max: int64(max), refusal: make(chan struct{}, maxRefusing), onRefuse: onRefuse}
	if shared && max > 0 {
		ll.share = (ll.max + addrShare - 1) / addrShare
		ll.byAddr = make(map[netip.Prefix]int64)
	}
	return ll
}

func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.max > 0 && l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refuse(c)
			continue
		}
		key, ok := l.hold(c)
		if !ok {
			l.open.Add(-1)
			l.refuse(c)
			continue
		}
		sc := &sniffConn{Conn: c, release: func() {
			if l.max > 0 {
				l.open.Add(-1)
			}
			l.drop(key)
		}}
		return sc, nil
	}
}

// hold counts c against its address's share; false if the share is full.
func (l *Listener) hold(c net.Conn) (netip.Prefix, bool) {
	if l.share <= 0 {
		return netip.Prefix{}, true
	}
	key, ok := clientPrefix(c.RemoteAddr())
	if !ok {
		return key, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[key] >= l.share {
		return key, false
	}
	l.byAddr[key]++
	return key, true
}

func (l *Listener) drop(key netip.Prefix) {
	if l.share <= 0 || !key.IsValid() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byAddr[key]--; l.byAddr[key] <= 0 {
		delete(l.byAddr, key)
	}
}

// clientPrefix is what a client address counts under (ClientPrefix).
func clientPrefix(a net.Addr) (netip.Prefix, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	return ClientPrefix(ip), true
}

// ClientPrefix is what one client's address counts under, for connection
// shares and wrong tokens alike: an IPv4 address, or an IPv6 address's
// /64, which one host usually holds whole.
func ClientPrefix(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap().WithZone("")
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// refuse answers c, over the cap or its address's share, and closes it.
func (l *Listener) refuse(c net.Conn) {
	if l.onRefuse != nil {
		l.onRefuse()
	}
	select {
	case l.refusal <- struct{}{}:
		go func() {
			defer func() { <-l.refusal }()
			refuseConn(c)
		}()
	default:
		c.Close()
	}
}

var connLimitAnswer = func() []byte {
	body := `{"error":"server: too many connections are open; come back later","retry_after_seconds":1}` + "\n"
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"+
		"Retry-After: 1\r\nProxy-Status: hostguard; error=connection_limit_reached\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

// refuseConn answers a connection over the cap. It reads what the client
// sent first (briefly), since closing with unread data makes the kernel
// reset the connection and the client would never see the answer.
func refuseConn(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4096)
	_, _ = c.Read(buf)
	_, _ = c.Write(connLimitAnswer)
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// sniffConn watches the header blocks a client sends for one that carries
// both Content-Length and Transfer-Encoding. net/http reads such a request
// as chunked and drops the Content-Length before any handler can see it;
// a server or proxy in front that reads it by Content-Length sees a
// different request boundary, which is how a second request is smuggled
// in a body. RFC 9112 section 6.1 allows treating it as an error and
// closing, which the daemon does (BothFramings).
//
// The scan does not follow message framing: it treats every blank line as
// the end of a block. Body text that looks like a header block with both
// fields is therefore flagged too; it is itself that smuggled request.
type sniffConn struct {
	net.Conn
	once    sync.Once
	release func()

	mu      sync.Mutex
	line    []byte // the start of the current line, up to sniffLine bytes
	lineLen int
	sawCL   bool
	sawTE   bool
	both    atomic.Bool
}

const sniffLine = 20 // enough for "transfer-encoding:"

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.scan(p[:n])
	}
	return n, err
}

func (c *sniffConn) scan(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range b {
		if ch == '\n' {
			if c.lineLen == 0 || (c.lineLen == 1 && c.line[0] == '\r') {
				if c.sawCL && c.sawTE {
					c.both.Store(true)
				}
				c.sawCL, c.sawTE = false, false
			} else {
				// No lowering copy: this runs for every header line
				// of every request.
				switch {
				case hasPrefixFold(c.line, "content-length:"):
					c.sawCL = true
				case hasPrefixFold(c.line, "transfer-encoding:"):
					c.sawTE = true
				}
			}
			c.line, c.lineLen = c.line[:0], 0
			continue
		}
		if len(c.line) < sniffLine {
			c.line = append(c.line, ch)
		}
		c.lineLen++
	}
}

// hasPrefixFold reports whether b starts with prefix, a lower-case ASCII
// string, in any case.
func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}

// CloseWrite half-closes the connection, so that a CONNECT target's close
// reaches the client as it would directly; a tunnel finds the method on
// the connection it took over.
func (c *sniffConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *sniffConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

type connKey struct{}

// ConnContext makes an accepted connection's smuggling scan reachable
// from its requests (see BothFramings); it is an http.Server's
// ConnContext. A connection that wraps another (one the proxy's own loop
// handed on) is looked into through its NetConn method.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if w, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = w.NetConn()
	}
	if sc, ok := c.(*sniffConn); ok {
		return context.WithValue(ctx, connKey{}, sc)
	}
	return ctx
}

// BothFramings reports whether r, a request with a Transfer-Encoding,
// came on a connection that also sent a Content-Length in one header
// block: net/http has dropped that Content-Length, and the request must
// be refused and its connection closed (see sniffConn).
func BothFramings(r *http.Request) bool {
	sc, _ := r.Context().Value(connKey{}).(*sniffConn)
	return sc != nil && len(r.TransferEncoding) > 0 && sc.both.Load()
}
