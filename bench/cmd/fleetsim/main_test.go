package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunPrintsOneRowPerPolicy(t *testing.T) {
	var out, log bytes.Buffer
	args := []string{"-rounds", "1", "-workers", "2", "-sessions", "2", "-timeout", "30ms", "-mix", "healthy=2,dead=1,5xx=1", "-policies", "none,hostguard", "-long-outage", "-caps", "4", "-outage-for", "3"}
	if err := run(context.Background(), args, &out, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{"| oracle |", "| none |", "| hostguard |", "-timeout 30ms", "| hangs | hostguard-probes-max4T |", "| refuses | failsafe |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	main, _, _ := strings.Cut(out.String(), "Long outage")
	if strings.Contains(main, "| gobreaker |") {
		t.Errorf("report has a policy that was not asked for:\n%s", out.String())
	}
}

func TestBadFlagsAreClearErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-mix", "healthy=x"}, "count for healthy"},
		{[]string{"-mix", "zombie=1"}, "not kind=count"},
		{[]string{"-mix", "healthy=0"}, "every count is zero"},
		{[]string{"-policies", "hystrix"}, `no policy named "hystrix"`},
		{[]string{"-rounds", "0"}, "-rounds 0"},
		{[]string{"-workers", "0", "-timeout", "1ms"}, "Timeout"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"-caps", "0"}, "-caps"},
		{[]string{"-outage-for", "1"}, "-outage-for 1"},
	} {
		var out, log bytes.Buffer
		err := run(context.Background(), c.args, &out, &log)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one containing %q", c.args, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote a report despite the error", c.args)
		}
	}
}
