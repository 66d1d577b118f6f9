package fleet

import (
	"context"
	"testing"
	"time"
)

func smallPlan(t *testing.T) *Plan {
	t.Helper()
	p, err := NewPlan(Config{
		Seed:     3,
		Timeout:  60 * time.Millisecond,
		Mix:      Mix{Healthy: 2, Dead: 1, Refused: 1, ServerError: 1},
		Workers:  2,
		Sessions: 8,
		Limit:    20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// toDown counts the plan's requests aimed at hosts that are down for good.
func toDown(p *Plan) int {
	n := 0
	for _, sessions := range p.Workers {
		for _, s := range sessions {
			if k := p.Hosts[s.Host].Kind; k == Dead || k == Refused {
				for _, w := range s.FanOuts {
					n += w
				}
			}
		}
	}
	return n
}

func runPolicy(t *testing.T, p *Plan, name string) Summary {
	t.Helper()
	pol, err := PolicyNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), p, pol)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Complete || len(r.Requests) != p.Requests() {
		t.Fatalf("%s: complete %v with %d of %d requests", name, r.Complete, len(r.Requests), p.Requests())
	}
	return Summarize(p, r)
}

func TestRunPolicies(t *testing.T) {
	t.Parallel()
	p := smallPlan(t)
	down := toDown(p)
	if down == 0 {
		t.Fatal("the plan never visits a down host; pick another seed")
	}

	oracle := runPolicy(t, p, "oracle")
	if oracle.SentToDown != 0 || oracle.Sent != p.Requests()-down || len(oracle.FalseRefusals) != 0 {
		t.Errorf("oracle: sent %d (%d to down hosts), false refusals %v; want %d, 0, none",
			oracle.Sent, oracle.SentToDown, oracle.FalseRefusals, p.Requests()-down)
	}

	none := runPolicy(t, p, "none")
	if none.SentToDown != down || none.Sent != p.Requests() {
		t.Errorf("no breaker: sent %d, %d to down hosts; want all %d, %d", none.Sent, none.SentToDown, p.Requests(), down)
	}
	if none.Blocked < p.Config.Timeout {
		t.Errorf("no breaker waited %v on down hosts, want at least one timeout", none.Blocked)
	}

	hg := runPolicy(t, p, "hostguard")
	if hg.SentToDown >= none.SentToDown {
		t.Errorf("hostguard sent %d requests to down hosts, no breaker %d", hg.SentToDown, none.SentToDown)
	}
	if hg.FalseRefusals[ServerError] != 0 || hg.FalseRefusals[Healthy] != 0 {
		t.Errorf("hostguard refused hosts that answer: %v", hg.FalseRefusals)
	}

	fs := runPolicy(t, p, "failsafe-5xx")
	if fs.FalseRefusals[ServerError] == 0 {
		t.Errorf("failsafe counting 5xx as failures never refused the 5xx host")
	}
}
