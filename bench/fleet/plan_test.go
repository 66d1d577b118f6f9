package fleet

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestNewPlanIsReproducible(t *testing.T) {
	t.Parallel()
	a, err := NewPlan(Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlan(Config{Seed: 7})
	c, _ := NewPlan(Config{Seed: 8})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed gave two plans")
	}
	if reflect.DeepEqual(a.Workers, c.Workers) {
		t.Fatal("two seeds gave one workload")
	}
	if len(a.Hosts) != 30 || len(a.Workers) != 8 || len(a.Workers[0]) != 30 {
		t.Fatalf("defaults: %d hosts, %d workers, %d sessions", len(a.Hosts), len(a.Workers), len(a.Workers[0]))
	}
	for i, h := range a.Hosts {
		if h.Kind == Flapping {
			if len(h.Schedule) == 0 || h.Schedule[0].From <= 0 {
				t.Fatalf("flapping host %d starts down or never flaps: %+v", i, h.Schedule)
			}
			for j := 1; j < len(h.Schedule); j++ {
				if h.Schedule[j].From <= h.Schedule[j-1].To {
					t.Fatalf("flapping host %d: outages overlap or touch: %+v", i, h.Schedule)
				}
			}
		}
		if h.Kind == Slow && h.Latency >= a.Config.Timeout {
			t.Fatalf("slow host %d answers after the timeout", i)
		}
	}
}

func TestNewPlanRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Timeout: time.Millisecond}, "Timeout"},
		{Config{Mix: Mix{Healthy: 1, Dead: -1}}, "Mix.Dead"},
		{Config{Workers: -1}, "Workers"},
		{Config{Sessions: 1_000_000}, "Sessions"},
		{Config{Limit: time.Millisecond}, "Limit"},
	} {
		if _, err := NewPlan(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "fleet: ") {
			t.Errorf("%+v: err %v, want one naming %s", c.cfg, err, c.want)
		}
	}
}
