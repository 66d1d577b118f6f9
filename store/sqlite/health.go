package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hostguard/hostguard/health"
)

var _ health.Store = (*Store)(nil)

const healthColumns = `name, display, consecutive_fails, backoff_until, last_success_at,
	last_failure_at, successes, failures, ignored_failures`

// Each outcome is one upsert, so the read of the old streak and the write of
// the new one cannot be split by another process sharing the file. The
// backoff step is looked up in SQL from the schedule passed as a JSON array
// of microseconds, so that it follows the streak this very write produced.
// ?1 name, ?2 display, ?3 now (µs), ?4 schedule (JSON).
const (
	healthTouchSuccess = `INSERT INTO health_hosts AS h
		(name, display, last_success_at, successes, updated_at)
		VALUES (?1, ?2, ?3, 1, ?3)
		ON CONFLICT (name) DO UPDATE SET
			consecutive_fails = 0,
			backoff_until = 0,
			last_success_at = max(h.last_success_at, excluded.last_success_at),
			successes = h.successes + 1,
			updated_at = excluded.updated_at
		RETURNING ` + healthColumns

	healthTouchFailure = `INSERT INTO health_hosts AS h
		(name, display, consecutive_fails, backoff_until, last_failure_at, failures, updated_at)
		VALUES (?1, ?2, 1, ?3 + json_extract(?4, '$[0]'), ?3, 1, ?3)
		ON CONFLICT (name) DO UPDATE SET
			consecutive_fails = h.consecutive_fails + 1,
			backoff_until = excluded.updated_at + json_extract(?4,
				'$[' || (min(h.consecutive_fails + 1, json_array_length(?4)) - 1) || ']'),
			last_failure_at = max(h.last_failure_at, excluded.last_failure_at),
			failures = h.failures + 1,
			updated_at = excluded.updated_at
		RETURNING ` + healthColumns

	healthTouchIgnored = `INSERT INTO health_hosts AS h
		(name, display, last_failure_at, failures, ignored_failures, updated_at)
		VALUES (?1, ?2, ?3, 1, 1, ?3)
		ON CONFLICT (name) DO UPDATE SET
			last_failure_at = max(h.last_failure_at, excluded.last_failure_at),
			failures = h.failures + 1,
			ignored_failures = h.ignored_failures + 1,
			updated_at = excluded.updated_at
		RETURNING ` + healthColumns
)

// HealthTouch records one outcome for p.Name (see health.Store).
func (s *Store) HealthTouch(ctx context.Context, p health.StoreTouchParams) (health.Record, error) {
	if p.Name == "" {
		return health.Record{}, errors.New("sqlite: health touch without a name")
	}
	var (
		q    string
		args = []any{p.Name, p.Display, micros(p.Now)}
	)
	switch p.Outcome {
	case health.Success:
		q = healthTouchSuccess
	case health.IgnoredFailure:
		q = healthTouchIgnored
	case health.Failure:
		if len(p.Schedule) == 0 {
			return health.Record{}, errors.New("sqlite: health failure without a backoff schedule")
		}
		q = healthTouchFailure
		args = append(args, scheduleJSON(p.Schedule))
	default:
		return health.Record{}, fmt.Errorf("sqlite: health touch with unknown outcome %v", p.Outcome)
	}
	ctx, end := s.bound(ctx)
	if err := s.ckpt.hold(ctx); err != nil {
		return health.Record{}, end(err)
	}
	stmt, err := s.prepared(ctx, s.w, q)
	if err != nil {
		return health.Record{}, end(fmt.Errorf("sqlite: health touch: %w", err))
	}
	rec, err := scanHealth(stmt.QueryRowContext(ctx, args...))
	if err != nil {
		return health.Record{}, end(s.wrote(fmt.Errorf("sqlite: health touch: %w", err)))
	}
	return rec, end(nil)
}

// HealthGet returns the record of name (see health.Store).
func (s *Store) HealthGet(ctx context.Context, name string) (health.Record, bool, error) {
	stmt, err := s.prepared(ctx, s.r, `SELECT `+healthColumns+` FROM health_hosts WHERE name = ?`)
	if err != nil {
		return health.Record{}, false, fmt.Errorf("sqlite: health get: %w", err)
	}
	rec, err := scanHealth(stmt.QueryRowContext(ctx, name))
	if errors.Is(err, sql.ErrNoRows) {
		return health.Record{}, false, nil
	}
	if err != nil {
		return health.Record{}, false, fmt.Errorf("sqlite: health get: %w", err)
	}
	return rec, true, nil
}

// HealthBlocked returns the names of p.Names that p.View excludes, in one
// query: the names travel as one JSON array, so the statement text (and its
// prepared form) is the same for any list length. Each name is looked up in
// the small partial index of failing names rather than in the table: most
// names are healthy, and the index holds every column both views need. The
// names are distinct (health.Store promises it), so the join needs no
// DISTINCT.
func (s *Store) HealthBlocked(ctx context.Context, p health.StoreBlockedParams) ([]string, error) {
	if len(p.Names) == 0 {
		return nil, nil
	}
	var q string
	args := []any{jsonStrings(p.Names)}
	switch p.View {
	case health.Healthy:
		q = `SELECT h.name FROM json_each(?1) AS j
			CROSS JOIN health_hosts AS h INDEXED BY health_hosts_failing ON h.name = j.value
			WHERE h.consecutive_fails > 0`
	case health.Available:
		q = `SELECT h.name FROM json_each(?1) AS j
			CROSS JOIN health_hosts AS h INDEXED BY health_hosts_failing ON h.name = j.value
			WHERE h.consecutive_fails > 0 AND h.backoff_until > ?2`
		args = append(args, micros(p.Now))
	default:
		return nil, fmt.Errorf("sqlite: health filter with view %q", p.View)
	}
	stmt, err := s.prepared(ctx, s.r, q)
	if err != nil {
		return nil, fmt.Errorf("sqlite: health filter: %w", err)
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: health filter: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlite: health filter: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: health filter: %w", err)
	}
	return out, nil
}

// HealthList returns one page of records in a view (see health.Store).
func (s *Store) HealthList(ctx context.Context, p health.StoreListParams) ([]health.Record, error) {
	if p.Limit <= 0 {
		return nil, fmt.Errorf("sqlite: health list with limit %d", p.Limit)
	}
	// The unhealthy and backoff views name consecutive_fails > 0 so that
	// the partial index health_hosts_failing serves them.
	var cond string
	args := []any{p.After, p.Limit}
	switch p.View {
	case health.All:
		cond = `1`
	case health.Healthy:
		cond = `consecutive_fails = 0`
	case health.Unhealthy:
		cond = `consecutive_fails > 0`
	case health.Available:
		cond = `backoff_until <= ?3`
		args = append(args, micros(p.Now))
	case health.Backoff:
		cond = `consecutive_fails > 0 AND backoff_until > ?3`
		args = append(args, micros(p.Now))
	default:
		return nil, fmt.Errorf("sqlite: health list with view %q", p.View)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+healthColumns+` FROM health_hosts
		WHERE name > ?1 AND `+cond+` ORDER BY name LIMIT ?2`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: health list: %w", err)
	}
	defer rows.Close()
	var out []health.Record
	for rows.Next() {
		rec, err := scanHealth(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: health list: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: health list: %w", err)
	}
	return out, nil
}

// HealthCounts counts the records by view at now (see health.Store).
func (s *Store) HealthCounts(ctx context.Context, now time.Time) (health.Counts, error) {
	var c health.Counts
	err := s.r.QueryRowContext(ctx, `SELECT count(*),
		coalesce(sum(consecutive_fails > 0), 0),
		coalesce(sum(backoff_until > ?), 0) FROM health_hosts`, micros(now)).Scan(&c.Known, &c.Unhealthy, &c.Backoff)
	if err != nil {
		return health.Counts{}, fmt.Errorf("sqlite: health counts: %w", err)
	}
	return c, nil
}

// HealthDelete forgets name (see health.Store).
func (s *Store) HealthDelete(ctx context.Context, name string) (bool, error) {
	ctx, end := s.bound(ctx)
	if err := s.ckpt.hold(ctx); err != nil {
		return false, end(err)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM health_hosts WHERE name = ?`, name)
	if err != nil {
		return false, end(s.wrote(fmt.Errorf("sqlite: health delete: %w", err)))
	}
	n, err := res.RowsAffected()
	return n > 0, end(err)
}

func scanHealth(row interface{ Scan(dest ...any) error }) (health.Record, error) {
	var (
		r                         health.Record
		backoff, lastOK, lastFail int64
	)
	err := row.Scan(&r.Name, &r.Display, &r.ConsecutiveFails, &backoff, &lastOK, &lastFail,
		&r.Successes, &r.Failures, &r.IgnoredFailures)
	r.BackoffUntil, r.LastSuccess, r.LastFailure = fromMicros(backoff), fromMicros(lastOK), fromMicros(lastFail)
	return r, err
}

// scheduleJSON renders the schedule as a JSON array of microseconds.
func scheduleJSON(sched []time.Duration) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range sched {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(d.Microseconds(), 10))
	}
	b.WriteByte(']')
	return b.String()
}

// jsonStrings renders names as a JSON array of strings.
func jsonStrings(names []string) string {
	b, _ := json.Marshal(names) // a []string always marshals
	return string(b)
}
