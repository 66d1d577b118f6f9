package cli

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hostguard/hostguard/retry"
)

// TestReadmeConfigFilesLoad reads every JSON block of the README as serve
// reads its configuration file: each must load and validate, and the
// retry.classes example must reach the scheduler's Config.
func TestReadmeConfigFilesLoad(t *testing.T) {
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	env := func(name string) (string, bool) { return "key-from-the-environment", name == "INDEXER_API_KEY" }
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		switch line := sc.Text(); {
		case cur == nil && line == "```json":
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	sawClasses := false
	for _, b := range blocks {
		s, err := parseConfig([]byte(b), env)
		if err != nil {
			t.Errorf("README configuration %s: %v", b, err)
			continue
		}
		if hm, ok := s.retry.Classes["hash_mismatch"]; ok {
			sawClasses = true
			if hm.Escalate != retry.BySources || len(hm.Ladder) != 3 || hm.Ladder[1] != 7*24*time.Hour {
				t.Errorf("README retry.classes: hash_mismatch is %+v", hm)
			}
		}
	}
	if !sawClasses {
		t.Error("the README shows no retry.classes with a class escalating by sources")
	}
}
