// Command upstream is the origin server of the proxy benchmark: it answers
// every request at once with a small fixed JSON body, so that what wrk
// measures is the proxy in front of it.
//
//	go run ./cmd/upstream -listen 127.0.0.1:18080
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// body is about the size of a small API answer.
var body = []byte(`{"user_info":{"auth":1,"status":"Active"},"server_info":{"url":"upstream","port":"80","timezone":"UTC"}}` + "\n")

func handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// run serves until ctx ends, after printing the address it listens on.
func run(ctx context.Context, args []string, out, log io.Writer) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	fs.SetOutput(log)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (loopback only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("upstream: -listen %q: %w", *listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("upstream: -listen %q is not a loopback address", *listen)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	fmt.Fprintf(out, "listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
