// Package adbcgo drives a real `lakestream serve` process with the Go ADBC
// Flight SQL driver (github.com/apache/arrow-adbc/go/adbc), as a client
// application would. It has only test files: nothing imports it.
//
// The server binary is $LAKESTREAM_BIN when set (make test sets it),
// otherwise this package builds ./cmd/lakestream into a temporary
// directory. A binary that cannot be built fails every test; nothing is
// skipped.
package adbcgo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serverBin is the lakestream binary the tests run, set by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if bin := os.Getenv("LAKESTREAM_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "LAKESTREAM_BIN: %v\n", err)
			return 1
		}
		serverBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "lakestream-adbcgo-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "temp dir: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	serverBin = filepath.Join(dir, "lakestream")
	// The module root is two levels up from this package's directory,
	// where go test runs it.
	cmd := exec.Command("go", "build", "-o", serverBin, "./cmd/lakestream")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the lakestream server: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// server is one `lakestream serve` process on loopback ports chosen by the
// kernel (--listen 127.0.0.1:0), with a data directory of its own.
type server struct {
	addr string // Flight SQL host:port
	cmd  *exec.Cmd
	log  *logBuffer
}

// servingLine is the start-up log line that carries the bound addresses.
var servingLine = regexp.MustCompile(`msg="lakestream serving" flight=(\S+)`)

// startServer starts a node and returns once it accepts connections; the
// node is stopped (SIGTERM, then waited for) when the test ends.
func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	s := &server{log: &logBuffer{}}
	s.cmd = exec.Command(serverBin, "serve", "--data-dir", filepath.Join(dir, "data"),
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", serverBin, err)
	}
	exited := make(chan error, 1)
	go func() {
		err := s.cmd.Wait()
		pw.CloseWithError(io.EOF)
		exited <- err
	}()
	// The reader goroutine keeps draining the log after start-up, so the
	// server never blocks on a full pipe.
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.log.add(line)
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() { s.stop(t, exited) })

	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	select {
	case s.addr = <-addr:
	case err := <-exited:
		exited <- err // for stop
		t.Fatalf("server exited at start (%v):\n%s", err, s.log.tail(30))
	case <-timeout.C:
		t.Fatalf("server did not report its address in 60 s:\n%s", s.log.tail(30))
	}
	// It logs the address once the listener is bound; one dial checks
	// that the port answers.
	c, err := net.DialTimeout("tcp", s.addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v\n%s", s.addr, err, s.log.tail(30))
	}
	c.Close()
	return s
}

func (s *server) uri() string { return "grpc://" + s.addr }

func (s *server) stop(t *testing.T, exited chan error) {
	s.cmd.Process.Signal(syscall.SIGTERM) // an error means it has exited already
	select {
	case err := <-exited:
		if err != nil && !t.Failed() {
			t.Errorf("server exit: %v\n%s", err, s.log.tail(30))
		}
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("server did not stop in 60 s after SIGTERM:\n%s", s.log.tail(30))
		<-exited
	}
	if t.Failed() {
		t.Logf("server log:\n%s", s.log.tail(50))
	}
}

// logBuffer keeps the server's output for failure messages.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	b.mu.Unlock()
}

func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out bytes.Buffer
	for _, l := range b.lines[max(0, len(b.lines)-n):] {
		out.WriteString(l)
		out.WriteByte('\n')
	}
	return strings.TrimRight(out.String(), "\n")
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
