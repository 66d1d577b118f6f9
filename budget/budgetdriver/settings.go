package budgetdriver

import (
	"context"
	"time"
)

// SettingsStore is a Store that also keeps the run-time settings record.
// store/sqlite and store/postgres implement it. A budget.Budget over a
// Store that does not keeps its overrides in memory, for this node only.
//
// A SettingsStore's BudgetAdmit must load the stored generation in its
// transaction so that admissions planned under an older one come back
// Stale.
type SettingsStore interface {
	Store
	// BudgetSettings returns the settings record: generation 0 and an
	// empty Doc when it was never written.
	BudgetSettings(ctx context.Context) (Settings, error)
	// BudgetPutSettings replaces the record with p.Doc and generation
	// p.Prev+1 if its generation is still p.Prev, and reports whether it
	// did (false: someone else changed it first; nothing changed).
	BudgetPutSettings(ctx context.Context, p PutSettingsParams) (bool, error)
}

// Settings is the settings record as stored. Doc is the Budget's own
// encoding (JSON); stores keep it as it is.
type Settings struct {
	Generation int64
	Doc        []byte
}

// PutSettingsParams is the input of SettingsStore.BudgetPutSettings.
type PutSettingsParams struct {
	Prev int64
	Doc  []byte
	Now  time.Time
}
