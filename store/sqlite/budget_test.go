package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hostguard/hostguard/budget"
	"github.com/hostguard/hostguard/store/sqlite"
	"github.com/hostguard/hostguard/store/storetest"
)

func BenchmarkBudgetAdmit(b *testing.B) {
	for _, sources := range []int{1, 100} {
		b.Run(fmt.Sprintf("sources=%d", sources), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			storetest.BenchBudgetAdmit(b, sources, 1, func(tb testing.TB) budget.Store {
				st, err := sqlite.Open(context.Background(), path)
				if err != nil {
					tb.Fatal(err)
				}
				tb.Cleanup(func() { st.Close() })
				return st
			})
		})
	}
}
