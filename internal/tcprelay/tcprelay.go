// Package tcprelay is a TCP relay on 127.0.0.1 for tests that need the
// network between the daemon and its database to fail as real networks
// do: a connection lost without a word (a cut), or packets that go
// nowhere (a black hole), and then the way back.
package tcprelay

import (
	"net"
	"sync"
)

// Mode is what the relay does with the bytes it is given.
type Mode int

const (
	// Pass forwards both ways.
	Pass Mode = iota
	// Cut closes every connection (the peer reads EOF mid-conversation)
	// and every new one as soon as it is accepted.
	Cut
	// BlackHole keeps connections open and accepts new ones, but
	// forwards nothing either way: the peer waits for an answer that
	// never comes. Leaving it closes the connections that lost bytes.
	BlackHole
)

// Relay forwards connections made to Addr to a target address.
type Relay struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    Mode
	conns   map[*pair]struct{}
	dropped int
	wg      sync.WaitGroup
}

type pair struct {
	client, server net.Conn
	lost           bool // bytes were dropped: the conversation is broken
}

func (p *pair) close() {
	p.client.Close()
	p.server.Close()
}

// New listens on 127.0.0.1 and relays to target (host:port). Close it when
// done.
func New(target string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{ln: ln, target: target, conns: map[*pair]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's host:port.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Set changes the mode; it acts on open connections at once.
func (r *Relay) Set(m Mode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode = m
	for p := range r.conns {
		if m == Cut || (m == Pass && p.lost) {
			p.close()
			delete(r.conns, p)
		}
	}
}

// Dropped is how many reads the relay has thrown away in black holes: a
// test waits on it to know that a statement is lost in one.
func (r *Relay) Dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Close stops the relay, closes every connection and waits for its
// goroutines.
func (r *Relay) Close() {
	r.ln.Close()
	r.mu.Lock()
	for p := range r.conns {
		p.close()
		delete(r.conns, p)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		mode := r.mode
		r.mu.Unlock()
		if mode == Cut {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		p := &pair{client: c, server: s}
		r.mu.Lock()
		r.conns[p] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(2)
		go r.copy(p, s, c)
		go r.copy(p, c, s)
	}
}

// copy forwards from src to dst while the mode lets it, and drops what it
// reads in a black hole.
func (r *Relay) copy(p *pair, dst, src net.Conn) {
	defer r.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			drop := r.mode == BlackHole
			if drop {
				p.lost = true
				r.dropped++
			}
			r.mu.Unlock()
			if !drop {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					err = werr
				}
			}
		}
		if err != nil {
			// Either side ending (EOF, a reset, Set closing it)
			// ends the pair, as a real connection would.
			r.mu.Lock()
			delete(r.conns, p)
			r.mu.Unlock()
			p.close()
			return
		}
	}
}
