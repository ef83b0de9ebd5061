package bench

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is a baseline's server process (a Kafka or Fluss JVM), started
// in a process group of its own so that stop ends it and every child it
// forked: no process outlives Run.
type server struct {
	name   string
	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's error; read after exited closes
	stopSg syscall.Signal
	once   sync.Once
}

// startServer starts cmd as cred (nil: as this process) in a new process
// group; stop sends sig to the group, then SIGKILL after stopGrace. Its
// output goes to the tail buffer, except a Stdout the caller set (the
// Fluss driver's replies).
func startServer(name string, cmd *exec.Cmd, cred *syscall.Credential, sig syscall.Signal) (*server, error) {
	s := &server{name: name, cmd: cmd, out: &tailBuffer{max: 64 << 10}, exited: make(chan struct{}), stopSg: sig}
	if cmd.Stdout == nil {
		cmd.Stdout = s.out
	}
	cmd.Stderr = s.out
	// Pdeathsig: should this process die without stopping it (a go test
	// timeout, SIGKILL), the kernel kills the server; postgres's backends
	// then see their postmaster gone and exit.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// stopGrace is how long stop waits for a clean shutdown before SIGKILL.
const stopGrace = 15 * time.Second

// stop ends the process group: the server's own shutdown signal, then
// SIGKILL to the group if it is still there after stopGrace. Both servers
// wait for their children before exiting (postgres's postmaster does on a
// fast shutdown; the JVM has none), so once the leader has exited the group
// is empty, and no signal is sent to a group id that may have been reused.
func (s *server) stop() error {
	var err error
	s.once.Do(func() {
		pgid := -s.cmd.Process.Pid
		_ = syscall.Kill(pgid, s.stopSg)
		select {
		case <-s.exited:
		case <-time.After(stopGrace):
			err = fmt.Errorf("%s did not stop in %s after %s; killed", s.name, stopGrace, s.stopSg)
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-s.exited
		}
	})
	return err
}

// alive reports an error once the process has exited, with its output's
// tail: a server that died during start-up says why.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited (%v): %s", s.name, s.err, s.out.tail(1500))
	default:
		return nil
	}
}

// waitReady polls ready every 100 ms until it returns nil, the process
// exits, or timeout passes.
func (s *server) waitReady(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if aerr := s.alive(); aerr != nil {
			return aerr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready in %s: %v; output: %s", s.name, timeout, err, s.out.tail(1500))
		}
		select {
		case <-tick.C:
		case <-s.exited:
		}
	}
}

// tailBuffer keeps the last max bytes written to it: a server's output,
// for the reason when it fails.
type tailBuffer struct {
	max int
	mu  struct {
		sync.Mutex
		b []byte
	}
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.b = append(t.mu.b, p...)
	if over := len(t.mu.b) - t.max; over > 0 {
		t.mu.b = append(t.mu.b[:0], t.mu.b[over:]...)
	}
	return len(p), nil
}

// tail is the last n bytes, on one line.
func (t *tailBuffer) tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.mu.b[max(0, len(t.mu.b)-n):]
	return strings.Join(strings.Fields(string(b)), " ")
}

// freePort is a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}
