package fleet_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/hostguard/hostguard/bench/fleet"
)

func ExampleNewPlan() {
	p, err := fleet.NewPlan(fleet.Config{
		Seed:     1,
		Timeout:  100 * time.Millisecond,
		Mix:      fleet.Mix{Healthy: 3, Dead: 1, Flapping: 1},
		Workers:  2,
		Sessions: 4,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	kinds := make([]string, len(p.Hosts))
	for i, h := range p.Hosts {
		kinds[i] = h.Kind.String()
	}
	fmt.Println(strings.Join(kinds, " "))
	fmt.Println("dead host up at 1s:", p.Hosts[3].Schedule.Up(time.Second))
	// Output:
	// healthy healthy healthy dead flapping
	// dead host up at 1s: false
}
