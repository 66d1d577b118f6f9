package budget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/budget/budgetdriver"
)

// grantIDPrefix marks grant ids, so that a stray string is recognised as
// not being one before it reaches the store.
const grantIDPrefix = "g_"

func newGrantID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("budget: make a grant id: %w", err)
	}
	return grantIDPrefix + hex.EncodeToString(b[:]), nil
}

// ValidGrantID reports whether id has the form of a grant id.
func ValidGrantID(id string) bool {
	if len(id) != len(grantIDPrefix)+32 || id[:len(grantIDPrefix)] != grantIDPrefix {
		return false
	}
	for _, c := range id[len(grantIDPrefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Settle closes a reservation at the figure actually used: the difference
// from the reserved cost is released (or, when actual is larger, charged).
// Any node may settle any reservation. Repeating the same call is harmless;
// settling again with another figure fails with ErrGrantClosed. A
// reservation whose UTC day is over can no longer be settled
// (ErrGrantExpired): it stays charged in full to its day. Actual is at most
// MaxAmount.
func (b *Budget) Settle(ctx context.Context, id string, actual int64) error {
	if !ValidGrantID(id) {
		return invalid("id", "%q is not a grant id", truncate(id))
	}
	if err := checkAmount("actual", actual, "0 (nothing used)"); err != nil {
		return err
	}
	now := b.clock()
	_, err := b.st.BudgetSettle(ctx, budgetdriver.SettleParams{ID: id, Actual: actual, Today: utcDay(now), Now: now})
	if err != nil {
		if errors.Is(err, ErrGrantNotFound) || errors.Is(err, ErrGrantClosed) || errors.Is(err, ErrGrantExpired) {
			return fmt.Errorf("%w (%s)", err, id)
		}
		return err
	}
	return nil
}

// Release gives a whole reservation back, as when the transfer never
// started. It is Settle with actual 0.
func (b *Budget) Release(ctx context.Context, id string) error {
	return b.Settle(ctx, id, 0)
}

func truncate(s string) string {
	if len(s) > 48 {
		return s[:48] + "..."
	}
	return s
}
