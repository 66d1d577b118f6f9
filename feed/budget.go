package feed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/budget"
)

// BudgetAdmitter admits page requests through b: the head page as
// budget.KindHeadPoll, the others as budget.KindGapPage, each one waiting
// for the source's pacing slot (budget.Budget.Wait). An exhausted
// allowance, a pause, a zero allowance or a pacing slot beyond ctx's
// deadline are refusals (ErrNotAdmitted); the refusal keeps budget's error,
// so errors.As finds *budget.ExhaustedError and its reset time. It also
// passes a source's own "limit reached" answers on to b.MarkExhausted.
func BudgetAdmitter(b *budget.Budget) Admitter { return budgetAdmitter{b} }

type budgetAdmitter struct{ b *budget.Budget }

func (a budgetAdmitter) AdmitPage(ctx context.Context, source string, head bool) error {
	kind := budget.KindGapPage
	if head {
		kind = budget.KindHeadPoll
	}
	_, err := a.b.Wait(ctx, budget.AdmitParams{Source: source, Kind: kind})
	switch {
	case err == nil:
		return nil
	case budgetRefusal(err):
		return fmt.Errorf("%w: %w", ErrNotAdmitted, err)
	}
	return err
}

// budgetRefusal reports whether err is a budget's refusal (rather than a
// failure to ask it).
func budgetRefusal(err error) bool {
	return errors.Is(err, budget.ErrExhausted) || errors.Is(err, budget.ErrPaced) ||
		errors.Is(err, budget.ErrPaused) || errors.Is(err, budget.ErrDisabled)
}

func (a budgetAdmitter) MarkExhausted(ctx context.Context, source string, until time.Time) error {
	return a.b.MarkExhausted(ctx, source, until)
}
