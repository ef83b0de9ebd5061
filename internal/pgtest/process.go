package pgtest

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is the postmaster, started in a process group of its own so that
// stop ends it and every backend it forked: nothing outlives the caller.
type process struct {
	name   string
	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's error; read after exited closes
	stopSg syscall.Signal
	once   sync.Once
}

// startProcess starts cmd as cred (nil: as this process) in a new process
// group; stop sends sig to the group, then SIGKILL after stopGrace.
func startProcess(name string, cmd *exec.Cmd, cred *syscall.Credential, sig syscall.Signal) (*process, error) {
	p := &process{name: name, cmd: cmd, out: &tailBuffer{max: 64 << 10}, exited: make(chan struct{}), stopSg: sig}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	// Pdeathsig: should this process die without stopping it (a go test
	// timeout, SIGKILL), the kernel kills the postmaster; its backends then
	// see it gone and exit.
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

// stopGrace is how long stop waits for a clean shutdown before SIGKILL.
const stopGrace = 15 * time.Second

// stop ends the process group: the shutdown signal, then SIGKILL to the
// group if it is still there after stopGrace. The postmaster waits for its
// backends on a fast shutdown, so once it has exited the group is empty and
// no signal goes to a group id that may have been reused.
func (p *process) stop() error {
	var err error
	p.once.Do(func() {
		pgid := -p.cmd.Process.Pid
		_ = syscall.Kill(pgid, p.stopSg)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			err = fmt.Errorf("%s did not stop in %s after %s; killed", p.name, stopGrace, p.stopSg)
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.exited
		}
	})
	return err
}

// alive reports an error once the process has exited, with its output's
// tail: a server that died during start-up says why.
func (p *process) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v): %s", p.name, p.err, p.out.tail(1500))
	default:
		return nil
	}
}

// waitReady polls ready every 100 ms until it returns nil, the process
// exits, or timeout passes.
func (p *process) waitReady(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if aerr := p.alive(); aerr != nil {
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

// tailBuffer keeps the last max bytes written to it: the server's output,
// for the reason when it fails.
type tailBuffer struct {
	max int
	mu  struct {
		sync.Mutex
		b []byte
	}
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.b = append(t.mu.b, b...)
	if over := len(t.mu.b) - t.max; over > 0 {
		t.mu.b = append(t.mu.b[:0], t.mu.b[over:]...)
	}
	return len(b), nil
}

// tail is the last n bytes, on one line.
func (t *tailBuffer) tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.mu.b[max(0, len(t.mu.b)-n):]
	return strings.Join(strings.Fields(string(b)), " ")
}
