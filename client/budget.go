package client

import (
	"context"
	"net/http"

	"github.com/hostguard/hostguard/api"
)

// Budget is the admission budget of background work: daily allowances
// and pacing.
type Budget struct{ c *Client }

// Admit asks whether a request may go now. A refusal matches
// ErrBudgetRefused, and one of ErrBudgetExhausted (the Error's Body says
// when it resets), ErrBudgetPaced (RetryAfter is the wait),
// ErrBudgetPaused and ErrBudgetDisabled. With p.Wait a paced source's
// next slot is waited for; an exhausted day never is.
func (b *Budget) Admit(ctx context.Context, p api.AdmitRequest) (api.Grant, error) {
	var res api.Grant
	err := b.c.call(ctx, http.MethodPost, "/v1/budget/admit", nil, p, &res, routeBudget)
	return res, err
}

// Settle settles a bytes reservation to what the transfer really used.
func (b *Budget) Settle(ctx context.Context, grantID string, actual int64) (api.GrantSettlement, error) {
	var res api.GrantSettlement
	err := b.c.call(ctx, http.MethodPost, "/v1/budget/grants/"+seg(grantID)+"/settle", nil,
		api.GrantSettleRequest{Actual: &actual}, &res, routePlain)
	return res, err
}

// Report returns today's usage against the allowances.
func (b *Budget) Report(ctx context.Context) (api.BudgetReport, error) {
	var res api.BudgetReport
	err := b.c.call(ctx, http.MethodGet, "/v1/budget", nil, nil, &res, routePlain)
	return res, err
}

// SetSource adds or replaces a source's settings on every node.
func (b *Budget) SetSource(ctx context.Context, name string, p api.SourceRequest) (api.SourceConfig, error) {
	var res api.SourceConfig
	err := b.c.call(ctx, http.MethodPut, "/v1/budget/sources/"+seg(name), nil, p, &res, routePlain)
	return res, err
}

// RemoveSource removes a source added at run time.
func (b *Budget) RemoveSource(ctx context.Context, name string) error {
	return b.c.call(ctx, http.MethodDelete, "/v1/budget/sources/"+seg(name), nil, nil, nil, routePlain)
}

// ResetSource returns a configured source to its configured settings.
func (b *Budget) ResetSource(ctx context.Context, name string) (api.SourceReset, error) {
	var res api.SourceReset
	err := b.c.call(ctx, http.MethodPost, "/v1/budget/sources/"+seg(name)+"/reset", nil, nil, &res, routePlain)
	return res, err
}

// Pause pauses (or, with false, resumes) every background admission on
// every node.
func (b *Budget) Pause(ctx context.Context, paused bool) (api.PauseResult, error) {
	var res api.PauseResult
	err := b.c.call(ctx, http.MethodPost, "/v1/budget/pause", nil, api.PauseRequest{Paused: &paused}, &res, routePlain)
	return res, err
}

// PauseSource pauses (or, with false, resumes) one source's background
// work on every node; the other sources go on.
func (b *Budget) PauseSource(ctx context.Context, name string, paused bool) (api.SourcePauseResult, error) {
	var res api.SourcePauseResult
	err := b.c.call(ctx, http.MethodPost, "/v1/budget/sources/"+seg(name)+"/pause", nil, api.PauseRequest{Paused: &paused}, &res, routePlain)
	return res, err
}
