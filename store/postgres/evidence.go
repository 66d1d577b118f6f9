package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostguard/hostguard/evidence"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EvidenceRecord implements evidence.Store. The upsert is one statement, so
// nodes recording the same key at once settle on the newest check; the trim
// runs in the same transaction (one commit) and may under-delete when two
// nodes trim together (both pick the same oldest rows), never over-delete;
// the next write catches up.
func (s *Store) EvidenceRecord(ctx context.Context, p evidence.StoreRecordParams) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO evidence (fingerprint, subject, source, verdict, reason, checked_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (fingerprint, subject, source) DO UPDATE SET
				verdict = excluded.verdict, reason = excluded.reason, checked_at = excluded.checked_at
			WHERE excluded.checked_at >= evidence.checked_at
			  AND (excluded.verdict <> 0 OR evidence.verdict = 0)`,
			p.Fingerprint, p.Subject, p.Source, int16(p.Verdict), string(p.Reason), p.CheckedAt.UTC())
		if err != nil || p.MaxRows <= 0 || p.TrimBatch <= 0 {
			return err
		}
		_, err = evidenceTrim(ctx, tx, p.MaxRows, p.TrimBatch)
		return err
	})
}

// evidenceTrim deletes up to batch of the oldest rows beyond maxRows,
// walking evidence_checked from its low end.
func evidenceTrim(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, maxRows, batch int) (int64, error) {
	// ARRAY(...) makes the victims an init plan, so the delete finds them
	// through the primary key; "id IN (subquery)" with a computed LIMIT
	// plans as a hash join over the whole table.
	tag, err := q.Exec(ctx, `
		DELETE FROM evidence WHERE id = ANY (ARRAY(
			SELECT id FROM evidence ORDER BY checked_at, id
			LIMIT (SELECT greatest(0, least(n - $1, $2)) FROM evidence_rows WHERE one)))`,
		int64(maxRows), int64(batch))
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// EvidenceGet implements evidence.Store.
func (s *Store) EvidenceGet(ctx context.Context, k evidence.Key) (evidence.Row, bool, error) {
	row := evidence.Row{Key: k}
	var v int16
	var reason string
	var at time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT verdict, reason, checked_at FROM evidence
		WHERE fingerprint = $1 AND subject = $2 AND source = $3`,
		k.Fingerprint, k.Subject, k.Source).Scan(&v, &reason, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return evidence.Row{}, false, nil
	}
	if err != nil {
		return evidence.Row{}, false, err
	}
	row.Verdict, row.Reason, row.CheckedAt = evidence.Verdict(v), evidence.Reason(reason), at.UTC()
	return row, true, nil
}

// EvidenceSubject implements evidence.Store.
func (s *Store) EvidenceSubject(ctx context.Context, fingerprint, subject string) ([]evidence.Row, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT source, verdict, reason, checked_at FROM evidence
		WHERE fingerprint = $1 AND subject = $2 ORDER BY source`, fingerprint, subject)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []evidence.Row
	for rows.Next() {
		r := evidence.Row{Key: evidence.Key{Fingerprint: fingerprint, Subject: subject}}
		var v int16
		var reason string
		var at time.Time
		if err := rows.Scan(&r.Source, &v, &reason, &at); err != nil {
			return nil, err
		}
		r.Verdict, r.Reason, r.CheckedAt = evidence.Verdict(v), evidence.Reason(reason), at.UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// EvidenceSummaries implements evidence.Store.
func (s *Store) EvidenceSummaries(ctx context.Context, p evidence.StoreSummariesParams) ([]evidence.SummaryRow, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT subject, pos, neg, newest FROM (
			SELECT subject,
				count(*) FILTER (WHERE verdict = 1 AND checked_at > $1) AS pos,
				count(*) FILTER (WHERE verdict = 2 AND checked_at > $2) AS neg,
				max(checked_at) FILTER (WHERE (verdict = 1 AND checked_at > $1) OR (verdict = 2 AND checked_at > $2)) AS newest
			FROM evidence WHERE fingerprint = $3 AND verdict <> 0
			GROUP BY subject) t
		WHERE pos > 0 OR neg > 0`,
		p.PositiveSince.UTC(), p.NegativeSince.UTC(), p.Fingerprint)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []evidence.SummaryRow
	for rows.Next() {
		var r evidence.SummaryRow
		var pos, neg int64
		if err := rows.Scan(&r.Subject, &pos, &neg, &r.CheckedAt); err != nil {
			return nil, err
		}
		r.Positive, r.Negative, r.CheckedAt = int(pos), int(neg), r.CheckedAt.UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// EvidenceInvalidate implements evidence.Store.
func (s *Store) EvidenceInvalidate(ctx context.Context, keep string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM evidence WHERE verdict = 1 AND fingerprint <> $1`, keep)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// EvidencePolicy implements evidence.Store.
func (s *Store) EvidencePolicy(ctx context.Context) (evidence.StorePolicyResult, error) {
	var out evidence.StorePolicyResult
	err := s.pool.QueryRow(ctx, `SELECT fingerprint, updated_at FROM evidence_policy WHERE id = 1`).Scan(&out.Fingerprint, &out.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return evidence.StorePolicyResult{}, nil
	}
	if err != nil {
		return evidence.StorePolicyResult{}, fmt.Errorf("postgres: read evidence policy: %w", err)
	}
	out.Set, out.UpdatedAt = true, out.UpdatedAt.UTC()
	return out, nil
}

// EvidenceSetPolicy implements evidence.Store. The policy row is locked
// first, so two nodes switching at once are serialised: the later sees the
// earlier's switch.
func (s *Store) EvidenceSetPolicy(ctx context.Context, p evidence.StoreSetPolicyParams) (evidence.StoreSetPolicyResult, error) {
	var out evidence.StoreSetPolicyResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO evidence_policy (id, fingerprint, updated_at) VALUES (1, $1, $2)
			ON CONFLICT (id) DO NOTHING`, p.Fingerprint, p.Now)
		if err != nil {
			return err
		}
		var cur string
		if err := tx.QueryRow(ctx, `SELECT fingerprint FROM evidence_policy WHERE id = 1 FOR UPDATE`).Scan(&cur); err != nil {
			return err
		}
		out.Changed = tag.RowsAffected() == 1 || cur != p.Fingerprint
		if cur != p.Fingerprint {
			if _, err := tx.Exec(ctx, `UPDATE evidence_policy SET fingerprint = $1, updated_at = $2 WHERE id = 1`, p.Fingerprint, p.Now); err != nil {
				return err
			}
		}
		tag, err = tx.Exec(ctx, `DELETE FROM evidence WHERE verdict = 1 AND fingerprint <> $1`, p.Fingerprint)
		if err != nil {
			return err
		}
		out.Deleted = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return evidence.StoreSetPolicyResult{}, fmt.Errorf("postgres: store evidence policy: %w", err)
	}
	return out, nil
}

// EvidencePrune implements evidence.Store.
func (s *Store) EvidencePrune(ctx context.Context, p evidence.StorePruneParams) (int64, error) {
	if p.MaxRows <= 0 || p.Batch <= 0 {
		return 0, nil
	}
	return evidenceTrim(ctx, s.pool, p.MaxRows, p.Batch)
}

// EvidenceCount implements evidence.Store.
func (s *Store) EvidenceCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT n FROM evidence_rows WHERE one`).Scan(&n)
	return n, err
}
