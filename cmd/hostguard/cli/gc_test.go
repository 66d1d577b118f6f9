package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestTuneGCKeepsAnExplicitGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "150")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, tuneGC changed the target to %d", got)
	}

	os.Unsetenv("GOGC") // t.Setenv restores it
	tuneGC()
	if got := debug.SetGCPercent(100); got != daemonGCPercent {
		t.Errorf("without GOGC, the target is %d, want %d", got, daemonGCPercent)
	}
}
