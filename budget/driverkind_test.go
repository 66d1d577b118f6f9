package budget_test

import (
	"testing"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// TestSumCountersAreTheDrivers holds the sum counters' kinds to
// budgetdriver's: a store starts the total from the source counters by
// the driver's names, and the Budget reads them back by its own.
func TestSumCountersAreTheDrivers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		budget budget.Kind
		driver budgetdriver.Kind
	}{
		{budget.CounterSource, budgetdriver.CounterSource},
		{budget.CounterTotal, budgetdriver.CounterTotal},
	} {
		if string(c.budget) != string(c.driver) {
			t.Errorf("budget's %q is %q in budgetdriver", c.budget, c.driver)
		}
	}
}
