package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/health"
	"github.com/jackc/pgx/v5"
)

var _ health.Store = (*Store)(nil)

const healthColumns = `name, display, consecutive_fails, backoff_until, last_success_at,
	last_failure_at, successes, failures, ignored_failures`

// Each outcome is one upsert: ON CONFLICT DO UPDATE locks the row, so nodes
// touching one name at once queue on it and each sees the streak the
// previous one wrote. The backoff step is picked in SQL from the schedule
// (microseconds, $4) by the streak this very statement produces, so the
// backoff always follows the counted value.
// $1 name, $2 display, $3 now, $4 schedule.
const (
	healthTouchSuccess = `INSERT INTO health_hosts AS h
		(name, display, last_success_at, successes, updated_at)
		VALUES ($1, $2, $3, 1, $3)
		ON CONFLICT (name) DO UPDATE SET
			consecutive_fails = 0,
			backoff_until = NULL,
			last_success_at = greatest(h.last_success_at, excluded.last_success_at),
			successes = h.successes + 1,
			updated_at = excluded.updated_at
		RETURNING ` + healthColumns

	healthTouchFailure = `INSERT INTO health_hosts AS h
		(name, display, consecutive_fails, backoff_until, last_failure_at, failures, updated_at)
		VALUES ($1, $2, 1, $3::timestamptz + ($4::bigint[])[1] * interval '1 microsecond', $3, 1, $3)
		ON CONFLICT (name) DO UPDATE SET
			consecutive_fails = h.consecutive_fails + 1,
			backoff_until = excluded.updated_at
				+ ($4::bigint[])[least(h.consecutive_fails + 1, cardinality($4::bigint[]))] * interval '1 microsecond',
			last_failure_at = greatest(h.last_failure_at, excluded.last_failure_at),
			failures = h.failures + 1,
			updated_at = excluded.updated_at
		RETURNING ` + healthColumns

	healthTouchIgnored = `INSERT INTO health_hosts AS h
		(name, display, last_failure_at, failures, ignored_failures, updated_at)
		VALUES ($1, $2, $3, 1, 1, $3)
		ON CONFLICT (name) DO UPDATE SET
			last_failure_at = greatest(h.last_failure_at, excluded.last_failure_at),
			failures = h.failures + 1,
			ignored_failures = h.ignored_failures + 1,
			updated_at = excluded.updated_at
		RETURNING ` + healthColumns
)

// HealthTouch records one outcome for p.Name (see health.Store).
func (s *Store) HealthTouch(ctx context.Context, p health.StoreTouchParams) (health.Record, error) {
	if p.Name == "" {
		return health.Record{}, errors.New("postgres: health touch without a name")
	}
	var (
		q    string
		args = []any{p.Name, p.Display, p.Now}
	)
	switch p.Outcome {
	case health.Success:
		q = healthTouchSuccess
	case health.IgnoredFailure:
		q = healthTouchIgnored
	case health.Failure:
		if len(p.Schedule) == 0 {
			return health.Record{}, errors.New("postgres: health failure without a backoff schedule")
		}
		q = healthTouchFailure
		sched := make([]int64, len(p.Schedule))
		for i, d := range p.Schedule {
			sched[i] = d.Microseconds()
		}
		args = append(args, sched)
	default:
		return health.Record{}, fmt.Errorf("postgres: health touch with unknown outcome %v", p.Outcome)
	}
	rec, err := scanHealth(s.pool.QueryRow(ctx, q, args...))
	if err != nil {
		return health.Record{}, fmt.Errorf("postgres: health touch: %w", err)
	}
	return rec, nil
}

// HealthGet returns the record of name (see health.Store).
func (s *Store) HealthGet(ctx context.Context, name string) (health.Record, bool, error) {
	rec, err := scanHealth(s.pool.QueryRow(ctx, `SELECT `+healthColumns+` FROM health_hosts WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return health.Record{}, false, nil
	}
	if err != nil {
		return health.Record{}, false, fmt.Errorf("postgres: health get: %w", err)
	}
	return rec, true, nil
}

// HealthBlocked returns the names of p.Names that p.View excludes, in one
// query (the names travel as one text[] parameter). Both views name
// consecutive_fails > 0 so that the planner can answer from the small
// partial index of failing names.
func (s *Store) HealthBlocked(ctx context.Context, p health.StoreBlockedParams) ([]string, error) {
	if len(p.Names) == 0 {
		return nil, nil
	}
	var (
		rows pgx.Rows
		err  error
	)
	switch p.View {
	case health.Healthy:
		rows, err = s.pool.Query(ctx, `SELECT name FROM health_hosts
			WHERE name = ANY($1::text[]) AND consecutive_fails > 0`, p.Names)
	case health.Available:
		rows, err = s.pool.Query(ctx, `SELECT name FROM health_hosts
			WHERE name = ANY($1::text[]) AND consecutive_fails > 0 AND backoff_until > $2`, p.Names, p.Now)
	default:
		return nil, fmt.Errorf("postgres: health filter with view %q", p.View)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: health filter: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: health filter: %w", err)
	}
	return out, nil
}

// HealthList returns one page of records in a view (see health.Store).
func (s *Store) HealthList(ctx context.Context, p health.StoreListParams) ([]health.Record, error) {
	if p.Limit <= 0 {
		return nil, fmt.Errorf("postgres: health list with limit %d", p.Limit)
	}
	// The unhealthy and backoff views name consecutive_fails > 0 so that
	// the partial index health_hosts_failing serves them.
	var cond string
	args := []any{p.After, p.Limit}
	switch p.View {
	case health.All:
		cond = `true`
	case health.Healthy:
		cond = `consecutive_fails = 0`
	case health.Unhealthy:
		cond = `consecutive_fails > 0`
	case health.Available:
		cond = `(backoff_until IS NULL OR backoff_until <= $3)`
		args = append(args, p.Now)
	case health.Backoff:
		cond = `consecutive_fails > 0 AND backoff_until > $3`
		args = append(args, p.Now)
	default:
		return nil, fmt.Errorf("postgres: health list with view %q", p.View)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+healthColumns+` FROM health_hosts
		WHERE name > $1 AND `+cond+` ORDER BY name LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: health list: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (health.Record, error) { return scanHealth(row) })
	if err != nil {
		return nil, fmt.Errorf("postgres: health list: %w", err)
	}
	return out, nil
}

// HealthCounts counts the records by view at now (see health.Store).
func (s *Store) HealthCounts(ctx context.Context, now time.Time) (health.Counts, error) {
	var c health.Counts
	err := s.pool.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE consecutive_fails > 0),
		count(*) FILTER (WHERE backoff_until > $1) FROM health_hosts`, now).Scan(&c.Known, &c.Unhealthy, &c.Backoff)
	if err != nil {
		return health.Counts{}, fmt.Errorf("postgres: health counts: %w", err)
	}
	return c, nil
}

// HealthDelete forgets name (see health.Store).
func (s *Store) HealthDelete(ctx context.Context, name string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM health_hosts WHERE name = $1`, name)
	if err != nil {
		return false, fmt.Errorf("postgres: health delete: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

func scanHealth(row pgx.Row) (health.Record, error) {
	var (
		r                         health.Record
		backoff, lastOK, lastFail *time.Time
	)
	err := row.Scan(&r.Name, &r.Display, &r.ConsecutiveFails, &backoff, &lastOK, &lastFail,
		&r.Successes, &r.Failures, &r.IgnoredFailures)
	r.BackoffUntil, r.LastSuccess, r.LastFailure = utc(backoff), utc(lastOK), utc(lastFail)
	return r, err
}

// utc turns a nullable timestamptz into a UTC time, NULL into the zero time.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
