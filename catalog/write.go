package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Every change to the catalog runs through Catalog.write, in this order,
// under writeMu:
//
//  1. On PostgreSQL: begin a transaction, lock the change counter's row
//     (SELECT … FOR UPDATE, which waits for any other process's write to
//     commit), and when the counter differs from the one this handle's
//     snapshot reflects, reload the snapshot and the users inside that
//     transaction and publish them. On SQLite this handle is the only
//     writer: its snapshot is always current, and the transaction begins
//     with the first statement (as BEGIN IMMEDIATE), so a check that fails
//     or finds nothing to do touches no transaction at all.
//  2. Run the change's checks (does the table exist?) against that state,
//     then its statements.
//  3. On PostgreSQL raise the counter; commit; publish the new snapshot.
//
// So two nodes creating one table at once behave as two sessions of one
// node: the second to lock sees the first's table and gets ErrTableExists,
// and table ids come from the database, the same on every node.
//
// A new write path takes this shape: c.write(ctx, func(w *change) error
// { checks against w.state / w.users / w.grants; w.what = "…"; w.exec /
// w.insertID; w.next = …; return nil }). A new kind of published state
// joins loadAll and publishLocked, and gets a current value and a next
// one in change, as users and grants have.

// A change is one write in progress: its checks read state and users, its
// statements run in tx, and what it sets in next and nextUsers is published
// once tx commits.
type change struct {
	ctx context.Context
	c   *Catalog
	// state, users and grants are current: the checks run against them.
	state  *snapshot
	users  *userSet
	grants *Grants
	// what names the change in the errors of its statements and commit
	// (`create table "default.t"`); set before the first statement.
	what string
	// tx is nil until begun; wrote is set by the first statement.
	tx    *sql.Tx
	wrote bool
	// counter is the change counter read under its lock (PostgreSQL).
	counter int64
	// reloaded is set when step 1 took in other processes' changes.
	reloaded bool
	// next, nextUsers and nextGrants, when set, are published after the
	// commit.
	next       *snapshot
	nextUsers  *userSet
	nextGrants *Grants
}

// write runs fn as one change (see above). fn returns an error to roll
// the change back; it sets w.next and w.nextUsers to what its statements
// made of w.state and w.users.
func (c *Catalog) write(ctx context.Context, fn func(w *change) error) error {
	c.writeMu.Lock()
	reloaded, err := c.writeLocked(ctx, fn)
	c.writeMu.Unlock()
	if reloaded {
		c.notify()
	}
	return err
}

func (c *Catalog) writeLocked(ctx context.Context, fn func(w *change) error) (reloaded bool, err error) {
	if c.closed.Load() {
		return false, ErrClosed
	}
	w := &change{ctx: ctx, c: c, state: c.state.Load(), users: c.userSet(), grants: c.Grants()}
	if c.d.shared {
		if err := w.lockShared(); err != nil {
			return false, err
		}
	}
	err = fn(w)
	if w.tx == nil {
		return w.reloaded, err
	}
	if err == nil && w.wrote && c.d.shared {
		if _, err = w.tx.ExecContext(ctx, `UPDATE changes SET n = n + 1 WHERE id = 1`); err != nil {
			err = fmt.Errorf("%s: count the change: %w", w.what, err)
		}
	}
	if err != nil || !w.wrote {
		return w.reloaded, errors.Join(err, rollback(w.tx))
	}
	if err := w.tx.Commit(); err != nil {
		// The outcome is unknown. Nothing is published; on PostgreSQL
		// the counter tells the next write or Refresh whether to reload.
		return w.reloaded, fmt.Errorf("%s: commit: %w", w.what, err)
	}
	if c.d.shared {
		c.seen = w.counter + 1
	}
	if w.next != nil {
		c.state.Store(w.next)
	}
	if w.nextUsers != nil {
		c.users.Store(w.nextUsers)
	}
	if w.nextGrants != nil {
		c.grants.Store(w.nextGrants)
	}
	return w.reloaded, nil
}

// lockShared is step 1 on PostgreSQL: begin, lock the counter, reload
// when it moved.
func (w *change) lockShared() error {
	w.what = "lock the catalog"
	tx, err := w.begin()
	if err != nil {
		return err
	}
	if err := tx.QueryRowContext(w.ctx, `SELECT n FROM changes WHERE id = 1 FOR UPDATE`).Scan(&w.counter); err != nil {
		return errors.Join(fmt.Errorf("lock the catalog: %w", err), rollback(tx))
	}
	if w.counter == w.c.seen {
		return nil
	}
	// READ COMMITTED: each statement from here on sees every write
	// committed before the lock was granted, and no other can commit
	// while it is held.
	snap, users, grants, err := loadAll(w.ctx, tx)
	if err != nil {
		return errors.Join(fmt.Errorf("reload the catalog: %w", err), rollback(tx))
	}
	w.c.publishLocked(snap, users, grants, w.counter)
	w.state, w.users, w.grants, w.reloaded = snap, users, grants, true
	return nil
}

func (w *change) begin() (*sql.Tx, error) {
	if w.tx != nil {
		return w.tx, nil
	}
	tx, err := w.c.db.BeginTx(w.ctx, w.c.d.writeTx)
	if err != nil {
		return nil, fmt.Errorf("%s: begin: %w", w.what, err)
	}
	w.tx = tx
	return tx, nil
}

// exec runs one statement of the change (written with ? placeholders).
func (w *change) exec(query string, args ...any) error {
	tx, err := w.begin()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(w.ctx, w.c.d.q(query), args...); err != nil {
		return fmt.Errorf("%s: %w", w.what, err)
	}
	w.wrote = true
	return nil
}

// insertID runs an INSERT and returns the id the database gave the row.
func (w *change) insertID(query string, args ...any) (int64, error) {
	tx, err := w.begin()
	if err != nil {
		return 0, err
	}
	id, err := w.c.d.insertID(w.ctx, tx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.what, err)
	}
	w.wrote = true
	return id, nil
}

func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// loadAll reads the whole catalog: the snapshot, the users and the
// grants.
func loadAll(ctx context.Context, q querier) (*snapshot, *userSet, *Grants, error) {
	snap, err := loadSnapshot(ctx, q)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load: %w", err)
	}
	users, err := loadUsers(ctx, q)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load: %w", err)
	}
	grants, err := loadGrants(ctx, q)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("load: %w", err)
	}
	return snap, users, grants, nil
}

// publishLocked publishes a loaded state that reflects change counter n.
// Under writeMu.
func (c *Catalog) publishLocked(snap *snapshot, users *userSet, grants *Grants, n int64) {
	c.state.Store(snap)
	c.users.Store(users)
	c.grants.Store(grants)
	c.seen = n
}

// Refresh brings this handle's snapshot up to date with the changes other
// processes made to a PostgreSQL catalog, and reports whether there were
// any (Config.OnChange is then called). When there were none it costs one
// query of one row. On SQLite this process is the only writer: Refresh
// has nothing to do and returns false.
func (c *Catalog) Refresh(ctx context.Context) (changed bool, err error) {
	c.writeMu.Lock()
	changed, err = c.refreshLocked(ctx)
	c.writeMu.Unlock()
	if changed {
		c.notify()
	}
	return changed, err
}

func (c *Catalog) refreshLocked(ctx context.Context) (bool, error) {
	if c.closed.Load() {
		return false, ErrClosed
	}
	if !c.d.shared {
		return false, nil
	}
	var n int64
	if err := c.db.QueryRowContext(ctx, `SELECT n FROM changes WHERE id = 1`).Scan(&n); err != nil {
		return false, fmt.Errorf("refresh the catalog: %w", err)
	}
	if n == c.seen {
		return false, nil
	}
	return c.reloadLocked(ctx)
}

// reloadLocked loads the whole catalog and the counter from one database
// snapshot (REPEATABLE READ: a write commits its rows and its counter
// together, so the two agree) and publishes it if the counter moved, or
// nothing was loaded yet. Under writeMu (or before c is shared).
func (c *Catalog) reloadLocked(ctx context.Context) (bool, error) {
	tx, err := c.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return false, fmt.Errorf("reload the catalog: begin: %w", err)
	}
	defer func() { _ = rollback(tx) }() // read only: nothing to commit
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT n FROM changes WHERE id = 1`).Scan(&n); err != nil {
		return false, fmt.Errorf("reload the catalog: %w", err)
	}
	if n == c.seen && c.state.Load() != nil {
		return false, nil
	}
	snap, users, grants, err := loadAll(ctx, tx)
	if err != nil {
		return false, err
	}
	c.publishLocked(snap, users, grants, n)
	return true, nil
}

// Watch polls a PostgreSQL catalog every Config.PollInterval (default
// 200ms) and refreshes the snapshot when another process changed it,
// calling Config.OnChange. It returns nil when ctx is done and ErrClosed
// when the catalog is closed; a failed poll is logged and retried at the
// next tick. The caller owns the goroutine that runs it. On SQLite there
// is no one else to watch: Watch returns nil at once.
func (c *Catalog) Watch(ctx context.Context) error {
	if !c.d.shared {
		return nil
	}
	tick := time.NewTicker(c.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if _, err := c.Refresh(ctx); err != nil {
			switch {
			case errors.Is(err, ErrClosed):
				return err
			case ctx.Err() != nil:
				return nil
			}
			c.cfg.Logger.Warn("catalog: poll for changes by other nodes", "err", err)
		}
	}
}

// notify tells Config.OnChange that the snapshot took in other processes'
// changes. Never under writeMu.
func (c *Catalog) notify() {
	if c.cfg.OnChange != nil {
		c.cfg.OnChange()
	}
}
