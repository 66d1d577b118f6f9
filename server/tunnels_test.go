package server

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestProxyTunnelPassesCloses: a CONNECT tunnel closes like the TCP
// connection it stands for. A target that writes and closes (or only
// half-closes) gives the client its bytes and then EOF at once, and the
// client's half-close reaches the target.
func TestProxyTunnelPassesCloses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		name string
		half bool
	}{{"close", false}, {"half-close", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ln := listen(t)
			t.Cleanup(func() { ln.Close() })
			heard := make(chan string, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					heard <- err.Error()
					return
				}
				defer c.Close()
				_, _ = c.Write([]byte("hello"))
				if !tc.half {
					heard <- ""
					return
				}
				_ = c.(*net.TCPConn).CloseWrite()
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				b, err := io.ReadAll(c)
				if err != nil {
					heard <- err.Error()
					return
				}
				heard <- string(b)
			}()
			resp, c, br := f.rawConnect(t, ln.Addr().String())
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT answered %d", resp.StatusCode)
			}
			// Far beyond any wait the tunnel itself should add: the
			// close is passed on as it comes, not after a timeout.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, err := io.ReadAll(br)
			if err != nil || string(b) != "hello" {
				t.Fatalf("through the tunnel: %q, %v; want hello then EOF", b, err)
			}
			if !tc.half {
				if got := <-heard; got != "" {
					t.Fatal(got)
				}
				return
			}
			if _, err := c.Write([]byte("bye")); err != nil {
				t.Fatal(err)
			}
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if got := <-heard; got != "bye" {
				t.Fatalf("the target read %q, want bye then EOF", got)
			}
		})
	}
}
