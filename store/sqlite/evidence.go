package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hostguard/hostguard/evidence"
)

// EvidenceRecord implements evidence.Store.
func (s *Store) EvidenceRecord(ctx context.Context, p evidence.StoreRecordParams) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO evidence (fingerprint, subject, source, verdict, reason, checked_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (fingerprint, subject, source) DO UPDATE SET
				verdict = excluded.verdict, reason = excluded.reason, checked_at = excluded.checked_at
			WHERE excluded.checked_at >= evidence.checked_at
			  AND (excluded.verdict <> 0 OR evidence.verdict = 0)`,
			p.Fingerprint, p.Subject, p.Source, int(p.Verdict), string(p.Reason), micros(p.CheckedAt))
		if err != nil {
			return err
		}
		if p.MaxRows <= 0 || p.TrimBatch <= 0 {
			return nil
		}
		_, err = evidenceTrim(ctx, tx, p.MaxRows, p.TrimBatch)
		return err
	})
}

// evidenceTrim deletes up to batch of the oldest rows beyond maxRows. The
// subquery walks evidence_checked from its low end, so it reads only the
// rows it deletes.
func evidenceTrim(ctx context.Context, tx *sql.Tx, maxRows, batch int) (int64, error) {
	res, err := tx.ExecContext(ctx, `
		DELETE FROM evidence WHERE id IN (
			SELECT id FROM evidence ORDER BY checked_at, id
			LIMIT (SELECT max(0, min(n - ?, ?)) FROM evidence_rows WHERE one = 1))`,
		maxRows, batch)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// EvidenceGet implements evidence.Store.
func (s *Store) EvidenceGet(ctx context.Context, k evidence.Key) (evidence.Row, bool, error) {
	row := evidence.Row{Key: k}
	var v int
	var reason string
	var at int64
	err := s.r.QueryRowContext(ctx, `
		SELECT verdict, reason, checked_at FROM evidence
		WHERE fingerprint = ? AND subject = ? AND source = ?`,
		k.Fingerprint, k.Subject, k.Source).Scan(&v, &reason, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return evidence.Row{}, false, nil
	}
	if err != nil {
		return evidence.Row{}, false, err
	}
	row.Verdict, row.Reason, row.CheckedAt = evidence.Verdict(v), evidence.Reason(reason), fromMicros(at)
	return row, true, nil
}

// EvidenceSubject implements evidence.Store.
func (s *Store) EvidenceSubject(ctx context.Context, fingerprint, subject string) ([]evidence.Row, error) {
	rows, err := s.r.QueryContext(ctx, `
		SELECT source, verdict, reason, checked_at FROM evidence
		WHERE fingerprint = ? AND subject = ? ORDER BY source`, fingerprint, subject)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []evidence.Row
	for rows.Next() {
		r := evidence.Row{Key: evidence.Key{Fingerprint: fingerprint, Subject: subject}}
		var v int
		var reason string
		var at int64
		if err := rows.Scan(&r.Source, &v, &reason, &at); err != nil {
			return nil, err
		}
		r.Verdict, r.Reason, r.CheckedAt = evidence.Verdict(v), evidence.Reason(reason), fromMicros(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// EvidenceSummaries implements evidence.Store.
func (s *Store) EvidenceSummaries(ctx context.Context, p evidence.StoreSummariesParams) ([]evidence.SummaryRow, error) {
	pos, neg := micros(p.PositiveSince), micros(p.NegativeSince)
	rows, err := s.r.QueryContext(ctx, `
		SELECT subject,
			sum(verdict = 1 AND checked_at > ?1),
			sum(verdict = 2 AND checked_at > ?2),
			max(CASE WHEN (verdict = 1 AND checked_at > ?1) OR (verdict = 2 AND checked_at > ?2)
				THEN checked_at END)
		FROM evidence WHERE fingerprint = ?3 AND verdict <> 0
		GROUP BY subject
		HAVING sum(verdict = 1 AND checked_at > ?1) > 0 OR sum(verdict = 2 AND checked_at > ?2) > 0`,
		pos, neg, p.Fingerprint)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []evidence.SummaryRow
	for rows.Next() {
		var r evidence.SummaryRow
		var at int64
		if err := rows.Scan(&r.Subject, &r.Positive, &r.Negative, &at); err != nil {
			return nil, err
		}
		r.CheckedAt = fromMicros(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// EvidenceInvalidate implements evidence.Store.
func (s *Store) EvidenceInvalidate(ctx context.Context, keep string) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM evidence WHERE verdict = 1 AND fingerprint <> ?`, keep)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// EvidencePolicy implements evidence.Store.
func (s *Store) EvidencePolicy(ctx context.Context) (evidence.StorePolicyResult, error) {
	var out evidence.StorePolicyResult
	var at int64
	err := s.r.QueryRowContext(ctx, `SELECT fingerprint, updated_at FROM evidence_policy WHERE id = 1`).Scan(&out.Fingerprint, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return evidence.StorePolicyResult{}, nil
	}
	if err != nil {
		return evidence.StorePolicyResult{}, fmt.Errorf("sqlite: read evidence policy: %w", err)
	}
	out.Set, out.UpdatedAt = true, fromMicros(at)
	return out, nil
}

// EvidenceSetPolicy implements evidence.Store.
func (s *Store) EvidenceSetPolicy(ctx context.Context, p evidence.StoreSetPolicyParams) (evidence.StoreSetPolicyResult, error) {
	var out evidence.StoreSetPolicyResult
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var cur string
		err := tx.QueryRowContext(ctx, `SELECT fingerprint FROM evidence_policy WHERE id = 1`).Scan(&cur)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			out.Changed = true
		case err != nil:
			return err
		default:
			out.Changed = cur != p.Fingerprint
		}
		if out.Changed {
			if _, err := tx.ExecContext(ctx, `INSERT INTO evidence_policy (id, fingerprint, updated_at) VALUES (1, ?, ?)
				ON CONFLICT (id) DO UPDATE SET fingerprint = excluded.fingerprint, updated_at = excluded.updated_at`,
				p.Fingerprint, micros(p.Now)); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM evidence WHERE verdict = 1 AND fingerprint <> ?`, p.Fingerprint)
		if err != nil {
			return err
		}
		out.Deleted, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return evidence.StoreSetPolicyResult{}, fmt.Errorf("sqlite: store evidence policy: %w", err)
	}
	return out, nil
}

// EvidencePrune implements evidence.Store.
func (s *Store) EvidencePrune(ctx context.Context, p evidence.StorePruneParams) (int64, error) {
	if p.MaxRows <= 0 || p.Batch <= 0 {
		return 0, nil
	}
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = evidenceTrim(ctx, tx, p.MaxRows, p.Batch)
		return err
	})
	return n, err
}

// EvidenceCount implements evidence.Store.
func (s *Store) EvidenceCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT n FROM evidence_rows WHERE one = 1`).Scan(&n)
	return n, err
}
