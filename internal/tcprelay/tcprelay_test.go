package tcprelay_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hostguard/hostguard/internal/tcprelay"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echo serves an echo on 127.0.0.1 until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func TestModes(t *testing.T) {
	r, err := tcprelay.New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("passing: %q, %v", buf, err)
	}

	r.Set(tcprelay.BlackHole)
	if _, err := c.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	for r.Dropped() == 0 {
		// Dropped counts the read the relay made of "lost"; the echo
		// never sees it, so nothing comes back.
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if n, _ := c.Read(buf); n > 0 {
			t.Fatalf("a black hole answered %q", buf[:n])
		}
	}

	r.Set(tcprelay.Cut)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(buf); err != io.EOF {
		t.Fatalf("a cut connection read %d, %v; want EOF", n, err)
	}
	c2, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(10 * time.Second))
	if n, err := c2.Read(buf); err == nil {
		t.Fatalf("a connection made while cut read %d bytes", n)
	}
}
