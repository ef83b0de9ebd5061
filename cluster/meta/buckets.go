package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

const bucketColumns = `table_id, part, bucket, replicas, leader, epoch, isr, version`

// CreateBuckets stores new buckets, all or none, each at Version 1 (the
// Version given is ignored).
func (s *sqlStore) CreateBuckets(ctx context.Context, bs []Bucket) error {
	seen := make(map[BucketKey]bool, len(bs))
	for _, b := range bs {
		if err := validateBucket(b); err != nil {
			return fmt.Errorf("create buckets: %w", err)
		}
		if seen[b.Key] {
			return fmt.Errorf("create buckets: %s: %w: given twice", b.Key, ErrInvalid)
		}
		seen[b.Key] = true
	}
	if len(bs) == 0 {
		return nil
	}
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		ins, err := tx.PrepareContext(ctx, s.q(`INSERT INTO lakestream_buckets (`+bucketColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 1)
			ON CONFLICT (table_id, part, bucket) DO NOTHING`))
		if err != nil {
			return false, fmt.Errorf("create buckets: %w", err)
		}
		defer ins.Close()
		for _, b := range bs {
			res, err := ins.ExecContext(ctx, b.Key.TableID, b.Key.Partition, b.Key.Bucket,
				encodeIDs(b.Replicas), b.Leader, b.Epoch, encodeIDs(b.ISR))
			if err != nil {
				return false, fmt.Errorf("create %s: %w", b.Key, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return false, fmt.Errorf("create %s: %w", b.Key, err)
			} else if n == 0 {
				return false, fmt.Errorf("create %s: %w", b.Key, ErrExists)
			}
		}
		return true, nil
	})
}

// Bucket returns one bucket.
func (s *sqlStore) Bucket(ctx context.Context, k BucketKey) (Bucket, error) {
	if s.closed.Load() {
		return Bucket{}, ErrClosed
	}
	return s.getBucket(ctx, s.db, k)
}

// getBucket reads k through q (the database, or a transaction).
func (s *sqlStore) getBucket(ctx context.Context, q querier, k BucketKey) (Bucket, error) {
	row := q.QueryRowContext(ctx, s.q(`SELECT `+bucketColumns+` FROM lakestream_buckets
		WHERE table_id = ? AND part = ? AND bucket = ?`), k.TableID, k.Partition, k.Bucket)
	b, err := scanBucket(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Bucket{}, fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	if err != nil {
		return Bucket{}, fmt.Errorf("read %s: %w", k, err)
	}
	return b, nil
}

// Buckets returns a table's buckets, ordered by partition, bucket.
func (s *sqlStore) Buckets(ctx context.Context, tableID int64) ([]Bucket, error) {
	return s.listBuckets(ctx, `SELECT `+bucketColumns+` FROM lakestream_buckets WHERE table_id = ?`, tableID)
}

// AllBuckets returns every bucket, ordered by table, partition, bucket.
func (s *sqlStore) AllBuckets(ctx context.Context) ([]Bucket, error) {
	return s.listBuckets(ctx, `SELECT `+bucketColumns+` FROM lakestream_buckets`)
}

// listBuckets runs a query of buckets and sorts the result in Go, so that
// both databases order partitions bytewise whatever their collation.
func (s *sqlStore) listBuckets(ctx context.Context, query string, args ...any) ([]Bucket, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("list buckets: %w", err)
	}
	defer rows.Close()
	var bs []Bucket
	for rows.Next() {
		b, err := scanBucket(rows)
		if err != nil {
			return nil, fmt.Errorf("list buckets: %w", err)
		}
		bs = append(bs, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list buckets: %w", err)
	}
	sortBuckets(bs)
	return bs, nil
}

// scanBucket reads one row of bucketColumns.
func scanBucket(row interface{ Scan(...any) error }) (Bucket, error) {
	var b Bucket
	var replicas, isr string
	if err := row.Scan(&b.Key.TableID, &b.Key.Partition, &b.Key.Bucket, &replicas, &b.Leader, &b.Epoch, &isr, &b.Version); err != nil {
		return Bucket{}, err
	}
	var err1, err2 error
	b.Replicas, err1 = decodeIDs(replicas)
	b.ISR, err2 = decodeIDs(isr)
	if err := errors.Join(err1, err2); err != nil {
		return Bucket{}, fmt.Errorf("%s: %w", b.Key, err)
	}
	return b, nil
}

// UpdateBucket stores b if the stored version is b.Version and the epoch
// rule holds; both conditions are in the UPDATE's WHERE clause, checked
// under the write lock.
func (s *sqlStore) UpdateBucket(ctx context.Context, b Bucket) (Bucket, error) {
	if err := validateBucket(b); err != nil {
		return Bucket{}, fmt.Errorf("update bucket: %w", err)
	}
	var stored Bucket
	err := s.write(ctx, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE lakestream_buckets
			SET replicas = ?, leader = ?, epoch = ?, isr = ?, version = version + 1
			WHERE table_id = ? AND part = ? AND bucket = ? AND version = ?
			  AND (epoch < ? OR (epoch = ? AND leader = ?))`),
			encodeIDs(b.Replicas), b.Leader, b.Epoch, encodeIDs(b.ISR),
			b.Key.TableID, b.Key.Partition, b.Key.Bucket, b.Version,
			b.Epoch, b.Epoch, b.Leader)
		if err != nil {
			return false, fmt.Errorf("update %s: %w", b.Key, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("update %s: %w", b.Key, err)
		}
		cur, err := s.getBucket(ctx, tx, b.Key)
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, &ConflictError{Current: cur, Reason: conflictReason(b, cur)}
		}
		stored = cur
		return true, nil
	})
	return stored, err
}

// conflictReason says which of UpdateBucket's conditions b failed against
// the stored bucket cur.
func conflictReason(b, cur Bucket) string {
	switch {
	case cur.Version != b.Version:
		return fmt.Sprintf("version %d is not the stored version", b.Version)
	case b.Epoch < cur.Epoch:
		return fmt.Sprintf("epoch %d is below the stored epoch", b.Epoch)
	default:
		return fmt.Sprintf("leader change from %q to %q must raise the epoch above %d", cur.Leader, b.Leader, cur.Epoch)
	}
}

// DeleteTable deletes a table's buckets.
func (s *sqlStore) DeleteTable(ctx context.Context, tableID int64) error {
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, s.q(`DELETE FROM lakestream_buckets WHERE table_id = ?`), tableID)
		if err != nil {
			return false, fmt.Errorf("delete table %d: %w", tableID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("delete table %d: %w", tableID, err)
		}
		return n > 0, nil
	})
}
