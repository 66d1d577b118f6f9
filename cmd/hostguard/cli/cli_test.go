package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/hostguard/hostguard"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"version"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	// Under go test the binary has no module version and no stamped
	// commit: the version is the source tree's VERSION file.
	if want := "hostguard " + hostguard.Version + " (commit "; !strings.HasPrefix(out.String(), want) {
		t.Fatalf("output %q does not start with %q", out.String(), want)
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"frobnicate"}, &out, &errb); code != ExitUsage {
		t.Fatalf("exit %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("stderr %q does not name the unknown command", errb.String())
	}
}

// TestHelpListsEveryCommandInOrder: help lists the command table sorted by
// name, each command once, and every listed command runs.
func TestHelpListsEveryCommandInOrder(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"help"}, &out, &errb); code != ExitOK {
		t.Fatalf("help: exit %d", code)
	}
	var listed []string
	for line := range strings.SplitSeq(out.String(), "\n") {
		if f := strings.Fields(line); strings.HasPrefix(line, "  ") && len(f) > 1 {
			listed = append(listed, f[0])
		}
	}
	if len(listed) != len(commands) || !slices.IsSorted(listed) {
		t.Fatalf("help lists %v; want the %d commands sorted by name", listed, len(commands))
	}
	for _, name := range listed {
		if _, ok := lookup(name); !ok {
			t.Errorf("help lists %q, which does not run", name)
		}
	}
}
