package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/store/postgres"
	"github.com/hostguard/hostguard/store/storetest"
)

// BenchmarkBudgetAdmit runs 8 goroutines on one store handle, or spread
// over three handles (three nodes' connection pools) on one database.
func BenchmarkBudgetAdmit(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		for _, sources := range []int{1, 100} {
			b.Run(fmt.Sprintf("nodes=%d/sources=%d", nodes, sources), func(b *testing.B) {
				dsn := storetest.PostgresDSN(b)
				storetest.BenchBudgetAdmit(b, sources, nodes, func(tb testing.TB) budget.Store {
					st, err := postgres.Open(context.Background(), dsn)
					if err != nil {
						tb.Fatal(err)
					}
					tb.Cleanup(func() { st.Close() })
					return st
				})
			})
		}
	}
}
