package proc

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server that is up is alive until Stop, which ends it with its own
// signal; a second Stop does nothing.
func TestStartStop(t *testing.T) {
	p, err := Start("sleeper", exec.Command("sh", "-c", "echo up; exec sleep 60"), nil, syscall.SIGTERM)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(time.Minute, func() error { return p.Alive() }); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Alive(); err == nil || !strings.Contains(err.Error(), "sleeper exited") {
		t.Fatalf("after Stop: Alive says %v, want that it exited", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// A server that dies while it is awaited ends the wait with its output's
// tail.
func TestWaitReadyReportsTheExit(t *testing.T) {
	p, err := Start("crasher", exec.Command("sh", "-c", "echo bad config >&2; exit 3"), nil, syscall.SIGTERM)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	err = p.WaitReady(time.Minute, func() error { return syscall.ECONNREFUSED })
	if err == nil || !strings.Contains(err.Error(), "crasher exited") || !strings.Contains(err.Error(), "bad config") {
		t.Fatalf("WaitReady: %v, want the exit and the output's tail", err)
	}
	<-p.Exited()
}

func TestTail(t *testing.T) {
	if got := Tail([]byte("line one\n  line\ttwo\n"), 14); got != "ne line two" {
		t.Fatalf("Tail: %q", got)
	}
}

func TestFreePort(t *testing.T) {
	if port, err := FreePort(); err != nil || port <= 0 {
		t.Fatalf("FreePort: %d, %v", port, err)
	}
}
