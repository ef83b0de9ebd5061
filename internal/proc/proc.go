package proc

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a server process started in a process group of its own, so
// that Stop ends it and every child it forked: nothing outlives the
// caller.
type Process struct {
	name   string
	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's error; read after exited closes
	stopSg syscall.Signal
	once   sync.Once
}

// Start starts cmd as cred (nil: as this process) in a new process group;
// Stop sends sig to the group, then SIGKILL after StopGrace. Its output
// goes to the tail that errors quote, but a Stdout the caller set (a
// driver's replies on a pipe).
func Start(name string, cmd *exec.Cmd, cred *syscall.Credential, sig syscall.Signal) (*Process, error) {
	p := &Process{name: name, cmd: cmd, out: &tailBuffer{max: 64 << 10}, exited: make(chan struct{}), stopSg: sig}
	if cmd.Stdout == nil {
		cmd.Stdout = p.out
	}
	cmd.Stderr = p.out
	// Pdeathsig: should this process die without stopping it (a go test
	// timeout, SIGKILL), the kernel kills the server; a postmaster's
	// backends then see it gone and exit.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// StopGrace is how long Stop waits for a clean shutdown before SIGKILL.
const StopGrace = 15 * time.Second

// Stop ends the process group: the server's own shutdown signal, then
// SIGKILL to the group if it is still there after StopGrace. The servers
// run so wait for their children before exiting (postgres's postmaster
// does on a fast shutdown; a JVM has none), so once the leader has exited
// the group is empty, and no signal goes to a group id that may have been
// reused. Later calls do nothing.
func (p *Process) Stop() error {
	var err error
	p.once.Do(func() {
		pgid := -p.cmd.Process.Pid
		_ = syscall.Kill(pgid, p.stopSg)
		select {
		case <-p.exited:
		case <-time.After(StopGrace):
			err = fmt.Errorf("%s did not stop in %s after %s; killed", p.name, StopGrace, p.stopSg)
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.exited
		}
	})
	return err
}

// Alive reports an error once the process has exited, with its output's
// tail: a server that died during start-up says why.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v): %s", p.name, p.err, p.out.tail(1500))
	default:
		return nil
	}
}

// Pid is the process id: the process group's leader.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited (Alive then says how).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// WaitReady polls ready every 100 ms until it returns nil, the process
// exits, or timeout passes.
func (p *Process) WaitReady(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if aerr := p.Alive(); aerr != nil {
			return aerr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready in %s: %v; output: %s", p.name, timeout, err, p.out.tail(1500))
		}
		select {
		case <-tick.C:
		case <-p.exited:
		}
	}
}

// FreePort is a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// FreeLoopbackAddr returns a loopback address (host:port) whose TCP and
// UDP ports were both free a moment ago: what a gossip listener binds.
func FreeLoopbackAddr() (string, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("free address: %w", err)
		}
		addr := l.Addr().String()
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err == nil {
			u.Close()
			return addr, nil
		}
	}
	return "", errors.New("free address: no loopback port free for both TCP and UDP")
}
