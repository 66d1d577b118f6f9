package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTinyRunReportsEverySystem(t *testing.T) {
	var out, log bytes.Buffer
	// Its own databases, so that a test never drops the ones a benchmark
	// run may be using.
	args := []string{"-db-prefix", "hgbench_test_cli", "-runs", "1", "-n", "200", "-river-workers", "20", "-backlog", "1000", "-trickle", "10", "-burst", "50", "-dir", t.TempDir()}
	if os.Getenv("CI") == "" {
		if err := run(context.Background(), []string{"-db-prefix", "hgbench_test_cli", "-skip", "sqlite,backlog", "-runs", "1", "-n", "1", "-river-workers", "1"}, &out, &log); err != nil {
			t.Skipf("no PostgreSQL to run against: %v", err)
		}
		out.Reset()
	}
	if err := run(context.Background(), args, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{"| hostguard, PostgreSQL |", "| River, riverpgxv5 |", "| hostguard, SQLite |", "| River, riversqlite |", "claim call p50"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBadFlagsAreClearErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-runs", "0"}, "-runs 0"},
		{[]string{"-db-prefix", "Bad-Name", "-skip", "sqlite,backlog"}, "not a plain lower-case identifier"},
		{[]string{"-skip", "redis"}, `unknown part "redis"`},
		{[]string{"-skip", "pg", "-n", "-5", "-dir", t.TempDir()}, "N is -5"},
		{[]string{"stray"}, "unexpected argument"},
	} {
		var out, log bytes.Buffer
		if err := run(context.Background(), c.args, &out, &log); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one containing %q", c.args, err, c.want)
		}
	}
}
