package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/hostguard/hostguard"
)

// Version and Commit may be set at build time with -ldflags "-X
// github.com/hostguard/hostguard/cmd/hostguard/cli.Version=0.1.0 -X
// ...cli.Commit=abc123" (make build and make dist do).
var (
	Version = ""
	Commit  = ""
)

// version returns the build version: the -ldflags value, else the module
// version the go command recorded (go install ...@v0.1.0), else the
// release the source tree is (its VERSION file).
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return hostguard.Version
}

// commit returns the commit the binary was built from: the -ldflags value,
// else the one the go command stamped from the git checkout (with
// "-dirty" when the tree had changes), else "unknown" (a build outside
// a checkout, or with -buildvcs=false).
func commit() string {
	if Commit != "" {
		return Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "hostguard version: takes no arguments")
		return ExitUsage
	}
	fmt.Fprintf(stdout, "hostguard %s (commit %s) %s/%s %s\n", version(), commit(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	return ExitOK
}
