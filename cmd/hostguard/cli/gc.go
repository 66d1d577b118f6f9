package cli

import (
	"os"
	"runtime/debug"
)

// daemonGCPercent is the daemon's garbage-collection target when GOGC is
// not set. The daemon's live heap is small (megabytes, up to tens with
// many endpoints), and each proxied request allocates a few kilobytes of
// short-lived request and header structures, so at Go's default of 100
// the collector runs many times a second and took about a tenth of the
// CPU of proxying (docs/benchmarks.md). 400 trades a heap up to five
// times the live one, instead of twice, for collections a quarter as
// often. GOGC, and GOMEMLIMIT, in the environment win as usual.
const daemonGCPercent = 400

// tuneGC applies daemonGCPercent unless the environment sets GOGC.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGCPercent)
	}
}
