//go:build pprof

package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on the default mux
	"os"
)

// A build for profiling (go build -tags pprof, as bench/proxy.sh -p does)
// serves net/http/pprof on HOSTGUARD_PPROF_LISTEN, a loopback address.
// Release builds have no such listener: the profiles show request paths
// and timings, which are nobody's business but the operator's.
func init() {
	addr := os.Getenv("HOSTGUARD_PPROF_LISTEN")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "hostguard: HOSTGUARD_PPROF_LISTEN %q is not a loopback address; no profiling listener\n", addr)
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			fmt.Fprintf(os.Stderr, "hostguard: profiling listener: %v\n", err)
		}
	}()
}
