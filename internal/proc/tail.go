package proc

import (
	"strings"
	"sync"
)

// Tail is the last n bytes of out (a command's output), on one line: what
// an error quotes of it.
func Tail(out []byte, n int) string {
	t := &tailBuffer{max: n}
	_, _ = t.Write(out)
	return t.tail(n)
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
