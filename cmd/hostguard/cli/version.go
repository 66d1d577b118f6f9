package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Version is set at build time with -ldflags "-X github.com/hostguard/hostguard/cmd/hostguard/cli.Version=v1.2.3".
var Version = ""

// version returns the build version: the -ldflags value, else the module
// version recorded by the go command, else "devel".
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "hostguard version: takes no arguments")
		return ExitUsage
	}
	fmt.Fprintf(stdout, "hostguard %s %s/%s %s\n", version(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	return ExitOK
}
