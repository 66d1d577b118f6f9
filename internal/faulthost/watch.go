package faulthost

import (
	"net"
	"testing"
	"time"
)

// WatchedListener reports the one-byte reads on its connections, which is
// how the proxy loop watches an idle client for a close: true on Events
// when one starts, false when it returns. The loop's reads of a request
// head fill its buffer, so they are not reported. Events is never
// blocked on: a report nobody is waiting for is dropped.
type WatchedListener struct {
	net.Listener
	Events chan<- bool
}

// Accept wraps the connection so that its one-byte reads are reported.
func (l WatchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, events: l.Events}, nil
}

type watchedConn struct {
	net.Conn
	events chan<- bool
}

func (c *watchedConn) Read(p []byte) (int, error) {
	if len(p) != 1 {
		return c.Conn.Read(p)
	}
	c.event(true)
	n, err := c.Conn.Read(p)
	c.event(false)
	return n, err
}

func (c *watchedConn) event(reading bool) {
	select {
	case c.events <- reading:
	default:
	}
}

// WaitWatch fails t unless the next report on events, within 10 s, is
// want.
func WaitWatch(t testing.TB, events <-chan bool, want bool) {
	t.Helper()
	select {
	case got := <-events:
		if got != want {
			t.Fatalf("client watch event %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no client watch event %v within 10 s", want)
	}
}
