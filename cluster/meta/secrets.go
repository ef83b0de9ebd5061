package meta

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
)

// Secret stores fresh under name unless a value is there, and returns the
// stored value. Insert-if-absent then read, in one write transaction: two
// nodes asking at once get the same value.
func (s *sqlStore) Secret(ctx context.Context, name string, fresh []byte) ([]byte, error) {
	if len(fresh) == 0 || name == "" {
		return nil, fmt.Errorf("secret %q: %w: empty name or value", name, ErrInvalid)
	}
	var stored string
	err := s.write(ctx, func(tx *sql.Tx) (bool, error) {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO lakestream_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`),
			name, hex.EncodeToString(fresh)); err != nil {
			return false, err
		}
		return false, tx.QueryRowContext(ctx, s.q(`SELECT value FROM lakestream_secrets WHERE name = ?`), name).Scan(&stored)
	})
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	v, err := hex.DecodeString(stored)
	if err != nil {
		return nil, fmt.Errorf("secret %q: stored value is not hex: %w", name, err)
	}
	return v, nil
}

// Secret stores fresh under name unless a value is there, and returns the
// stored value.
func (m *Mem) Secret(_ context.Context, name string, fresh []byte) ([]byte, error) {
	if len(fresh) == 0 || name == "" {
		return nil, fmt.Errorf("secret %q: %w: empty name or value", name, ErrInvalid)
	}
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.st.mu.Unlock()
	if m.st.mu.secrets == nil {
		m.st.mu.secrets = map[string][]byte{}
	}
	v, ok := m.st.mu.secrets[name]
	if !ok {
		v = append([]byte(nil), fresh...)
		m.st.mu.secrets[name] = v
	}
	return append([]byte(nil), v...), nil
}
