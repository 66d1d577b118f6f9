package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestImpatientTable(t *testing.T) {
	var out, log bytes.Buffer
	args := []string{"-rounds", "1", "-workers", "2", "-sessions", "2", "-timeout", "30ms", "-mix", "healthy=1,dead=1,slow=1", "-policies", "hostguard", "-impatient", "0.5"}
	if err := run(context.Background(), args, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	_, table, ok := strings.Cut(out.String(), "Impatient clients: 1 of 2 workers give up after 0.5 T")
	if !ok || !strings.Contains(table, "| hostguard |") {
		t.Errorf("report lacks the impatient clients' table:\n%s", out.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-impatient", "1.5"}, "-impatient 1.5"},
		{[]string{"-patience", "0"}, "-patience 0"},
	} {
		var out, log bytes.Buffer
		if err := run(context.Background(), c.args, &out, &log); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one containing %q", c.args, err, c.want)
		}
	}
}
