package meta

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AcquireLease takes or renews lease name for holder. The decision is made
// under the write lock, on the store's clock (dialect.now); the returned
// Expires is on the caller's clock, from before the call began, so it is
// never later than the store's expiry.
func (s *sqlStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error) {
	if err := validateLease(name, holder, ttl); err != nil {
		return Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	start := s.opts.Now()
	var token int64
	err := s.write(ctx, func(tx *sql.Tx) (bool, error) {
		now, err := s.d.now(ctx, tx)
		if err != nil {
			return false, fmt.Errorf("acquire lease %q: store clock: %w", name, err)
		}
		expires := now + ttl.Microseconds()
		var cur Lease
		var curExpires int64
		err = tx.QueryRowContext(ctx, s.q(`SELECT holder, token, expires_us FROM lakestream_leases WHERE name = ?`), name).
			Scan(&cur.Holder, &cur.Token, &curExpires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			token = 1
			_, err = tx.ExecContext(ctx, s.q(`INSERT INTO lakestream_leases (name, holder, token, expires_us) VALUES (?, ?, ?, ?)`),
				name, holder, token, expires)
			return true, wrapLease("acquire", name, err)
		case err != nil:
			return false, wrapLease("acquire", name, err)
		case cur.Holder == holder:
			// A renewal: nobody held the lease since, so the token stands.
			token = cur.Token
			_, err = tx.ExecContext(ctx, s.q(`UPDATE lakestream_leases SET expires_us = ? WHERE name = ?`), expires, name)
			return false, wrapLease("renew", name, err)
		case cur.Holder != "" && curExpires > now:
			return false, &LeaseHeldError{Name: name, Holder: cur.Holder, Expires: time.UnixMicro(curExpires)}
		default:
			token = cur.Token + 1
			_, err = tx.ExecContext(ctx, s.q(`UPDATE lakestream_leases SET holder = ?, token = ?, expires_us = ? WHERE name = ?`),
				holder, token, expires, name)
			return true, wrapLease("acquire", name, err)
		}
	})
	if err != nil {
		return Lease{}, err
	}
	return Lease{Name: name, Holder: holder, Token: token, Expires: start.Add(ttl)}, nil
}

func wrapLease(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s lease %q: %w", op, name, err)
}

// ReleaseLease gives l up if its holder still holds it with its token. The
// row stays, with holder "" and expired, so that its token keeps counting.
func (s *sqlStore) ReleaseLease(ctx context.Context, l Lease) error {
	if l.Name == "" || l.Holder == "" {
		return fmt.Errorf("release lease %q: %w: empty name or holder", l.Name, ErrInvalid)
	}
	return s.write(ctx, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE lakestream_leases SET holder = '', expires_us = 0
			WHERE name = ? AND holder = ? AND token = ?`), l.Name, l.Holder, l.Token)
		if err != nil {
			return false, wrapLease("release", l.Name, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, wrapLease("release", l.Name, err)
		}
		if n == 0 {
			return false, fmt.Errorf("release lease %q: not held by %q with token %d: %w", l.Name, l.Holder, l.Token, ErrNotFound)
		}
		return true, nil
	})
}

// Lease returns the live lease name.
func (s *sqlStore) Lease(ctx context.Context, name string) (Lease, error) {
	if s.closed.Load() {
		return Lease{}, ErrClosed
	}
	// The store's clock is read just before the row: a lease that expires
	// between the two reads is reported live, the safe side for a caller
	// deciding whether to wait.
	now, err := s.d.now(ctx, s.db)
	if err != nil {
		return Lease{}, fmt.Errorf("read lease %q: store clock: %w", name, err)
	}
	l := Lease{Name: name}
	var expires int64
	err = s.db.QueryRowContext(ctx, s.q(`SELECT holder, token, expires_us FROM lakestream_leases WHERE name = ?`), name).
		Scan(&l.Holder, &l.Token, &expires)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (l.Holder == "" || expires <= now)) {
		return Lease{}, fmt.Errorf("lease %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Lease{}, wrapLease("read", name, err)
	}
	l.Expires = time.UnixMicro(expires)
	return l, nil
}
