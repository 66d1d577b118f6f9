package storetest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Partition stands between one handle and its database, on loopback: Cut
// closes every connection through it and refuses new ones, as a network
// partition between one node and the database does, until Heal.
type Partition struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

// NewPartition starts a Partition in front of the server of dsn (a URL)
// and returns the DSN that reaches the server through it. It stops when
// the test ends, after the handles opened later (cleanups run last
// registered first).
func NewPartition(t testing.TB, dsn string) (string, *Partition) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("partition: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("partition: %v", err)
	}
	p := &Partition{ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	u.Host = ln.Addr().String()
	return u.String(), p
}

func (p *Partition) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = true
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// serve pipes c to the server and back until either side or Cut closes.
func (p *Partition) serve(c net.Conn) {
	defer p.wg.Done()
	s, err := net.Dial("tcp", p.target)
	if !p.track(s, err) {
		p.drop(c)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	p.drop(c)
	p.drop(s)
	<-done
}

// track adds the server side of a pair, unless the dial failed or a cut
// came first.
func (p *Partition) track(s net.Conn, err error) bool {
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		s.Close()
		return false
	}
	p.conns[s] = true
	return true
}

func (p *Partition) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Cut closes every connection through p and refuses new ones.
func (p *Partition) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Heal lets new connections through again.
func (p *Partition) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}
