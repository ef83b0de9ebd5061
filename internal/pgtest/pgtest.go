// Package pgtest starts a throwaway PostgreSQL server from the machine's
// binaries (initdb, postgres): on a free loopback port, in a temp dir, with
// trust authentication, as the user nobody when this process is root
// (PostgreSQL refuses to run as root). Tests use it for the PostgreSQL
// metadata store, and the bench for its PostgreSQL baseline.
//
// It imports no project package.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lakestream/lakestream/internal/proc"
)

// ErrNoPostgres is returned by Start when no initdb is found.
var ErrNoPostgres = errors.New("no PostgreSQL: initdb not found on PATH, in /usr/lib/postgresql/*/bin or /usr/local/bin")

// Options configures Start. The zero value is valid.
type Options struct {
	// Settings are server settings, "name=value", each passed as
	// postgres -c. Default: none (PostgreSQL's defaults).
	Settings []string
	// ReadyTimeout bounds the wait for the server to accept connections.
	// Default: 60s.
	ReadyTimeout time.Duration
	// BinDir holds initdb and postgres. Default: BinDir().
	BinDir string
}

// Server is a running PostgreSQL.
type Server struct {
	// Dir holds the cluster (Dir/data) and the socket directory; Stop
	// removes it.
	Dir string
	// Addr is host:port on loopback.
	Addr string
	// URI connects as the superuser postgres to the database postgres.
	URI string
	// Version is the server's version (SHOW server_version).
	Version string

	proc *proc.Process
}

// BinDir is where initdb and postgres are: on PATH, else the newest of
// Debian's /usr/lib/postgresql/<version>/bin, else /usr/local/bin.
func BinDir() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Sort(dirs)
	if len(dirs) > 0 {
		return dirs[len(dirs)-1]
	}
	return "/usr/local/bin"
}

// Start creates a cluster in a new temp dir and starts postgres on it. The
// caller must Stop the server. ErrNoPostgres when the binaries are missing.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	bin := opts.BinDir
	if bin == "" {
		bin = BinDir()
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		return nil, ErrNoPostgres
	}
	cred, err := unprivileged()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "lakestream-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: base}
	if err := s.initdb(ctx, bin, cred); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	if err := s.serve(ctx, bin, cred, opts); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// env is the environment of initdb and postgres.
func (s *Server) env(bin string) []string {
	return []string{"LC_ALL=C", "LANG=C", "PATH=" + bin + ":/usr/bin:/bin", "HOME=" + s.Dir}
}

// initdb creates the cluster in Dir/data, owned by cred's user.
func (s *Server) initdb(ctx context.Context, bin string, cred *syscall.Credential) error {
	data, sock := filepath.Join(s.Dir, "data"), filepath.Join(s.Dir, "sock")
	if err := makeDirs(s.Dir, cred, data, sock); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions") // --no-sync: initdb's own writes only
	cmd.Env, cmd.SysProcAttr = s.env(bin), &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, proc.Tail(out, 1500))
	}
	return nil
}

// serve starts postgres on a free loopback port and waits until it
// answers.
func (s *Server) serve(ctx context.Context, bin string, cred *syscall.Credential, opts Options) error {
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	args := []string{"-D", filepath.Join(s.Dir, "data"), "-h", "127.0.0.1", "-p", strconv.Itoa(port),
		"-k", filepath.Join(s.Dir, "sock")}
	for _, set := range opts.Settings {
		args = append(args, "-c", set)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Env = s.env(bin)
	// SIGINT is PostgreSQL's fast shutdown: it ends the sessions and waits
	// for every backend before the postmaster exits.
	if s.proc, err = proc.Start("postgres", cmd, cred, syscall.SIGINT); err != nil {
		return err
	}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.URI = s.DatabaseURI("postgres")
	return s.proc.WaitReady(opts.ReadyTimeout, func() error {
		c, err := s.Connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return c.QueryRow(ctx, "SHOW server_version").Scan(&s.Version)
	})
}

// DatabaseURI is the URI of database name on this server, as the
// superuser postgres.
func (s *Server) DatabaseURI(name string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", s.Addr, name)
}

// Connect opens a connection to the database postgres.
func (s *Server) Connect(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.Connect(ctx, s.URI)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", s.Addr, err)
	}
	return c, nil
}

// CreateDatabase creates an empty database name and returns its URI: a
// fresh database per test on one server.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	c, err := s.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("postgres: create database %s: %w", name, err)
	}
	return s.DatabaseURI(name), nil
}

// Stop shuts the server down and removes its directory.
func (s *Server) Stop() error {
	var err error
	if s.proc != nil {
		err = s.proc.Stop()
	}
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// makeDirs makes dirs, owned by cred's user, under base, which that user
// must be able to traverse.
func makeDirs(base string, cred *syscall.Credential, dirs ...string) error {
	if err := os.Chmod(base, 0o755); err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

// unprivileged is the credential of the user nobody when this process is
// root, else nil: run as ourselves.
func unprivileged() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no user nobody to run PostgreSQL as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user nobody: uid %q gid %q: %w", u.Uid, u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
