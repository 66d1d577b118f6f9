package budgetdriver

import "errors"

// The errors Store.BudgetSettle returns; budget's ErrGrantNotFound,
// ErrGrantClosed and ErrGrantExpired are these same values, so errors.Is
// matches them on either side of the seam.
var (
	// ErrGrantNotFound: no reservation has that id.
	ErrGrantNotFound = errors.New("budget: no such grant")
	// ErrGrantClosed: the reservation was already settled or released with
	// a different figure.
	ErrGrantClosed = errors.New("budget: grant already settled")
	// ErrGrantExpired: the reservation's day is over; it stays charged in
	// full.
	ErrGrantExpired = errors.New("budget: grant's day is over")
)
