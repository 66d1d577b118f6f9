package fleet

import (
	"net/http"
	"testing"
	"time"
)

// TestImpatientClients runs hostguard's policy over a plan where one
// worker waits the whole timeout and one gives up after half of it: the
// impatient worker's give-ups trip the silent host on the second fan-out,
// and never a slow host the patient worker has seen answer.
func TestImpatientClients(t *testing.T) {
	t.Parallel()
	const T = 100 * time.Millisecond
	const (
		dead = iota
		slow
		healthy
	)
	p := &Plan{
		Config: Config{Seed: 1, Timeout: T, Workers: 2, Sessions: 3, Limit: 20 * time.Second, Impatient: 0.5, Patience: T / 2},
		Hosts: []HostSpec{
			dead:    {Kind: Dead, Schedule: Schedule{{From: 0, To: Forever, Hang: true}}},
			slow:    {Kind: Slow, Latency: T * 3 / 4, Status: http.StatusOK},
			healthy: {Kind: Healthy, Latency: T / 30, Status: http.StatusOK},
		},
		Workers: [][]Session{
			{{Host: slow, FanOuts: []int{3}}, {Host: healthy, FanOuts: []int{3, 3}}, {Host: slow, FanOuts: []int{3, 3}}},
			{{Host: dead, FanOuts: []int{3, 3, 3, 3}}, {Host: healthy, FanOuts: []int{3, 3, 3, 3}}, {Host: slow, FanOuts: []int{3, 3, 3, 3}}},
		},
		Patience: []time.Duration{0, T / 2},
	}
	hg := runPolicy(t, p, "hostguard")
	if len(hg.DeadFanOuts) != 1 || hg.DeadFanOuts[0] != 2 {
		t.Errorf("the silent host was first refused after %v fan-outs; want [2], a trip on the second give-up", hg.DeadFanOuts)
	}
	if hg.FalseRefusals[Slow] != 0 || hg.FalseRefusals[Healthy] != 0 || hg.PatientRefusals != 0 || hg.SlowAfterAnswer != 0 {
		t.Errorf("hostguard refused hosts that answer: %v, %d within every client's patience", hg.FalseRefusals, hg.PatientRefusals)
	}
	// Without a breaker every request reaches the network, and nothing
	// is refused.
	none := runPolicy(t, p, "none")
	if none.Sent != p.Requests() || len(none.DeadFanOuts) != 0 {
		t.Errorf("no breaker: sent %d of %d, dead fan-outs %v", none.Sent, p.Requests(), none.DeadFanOuts)
	}
}
