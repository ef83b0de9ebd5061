package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress is the live progress line. On a terminal one line is redrawn in
// place (carriage return, erase line) ten times a second, with a bar when
// the step has a known total; elsewhere (a file, a pipe, CI logs) each
// step is one plain line, so logs stay readable.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time
	done  atomic.Int64

	mu struct {
		sync.Mutex
		step  string
		total int64 // of done; 0: no bar
		unit  string
		drawn bool
	}
	stop chan struct{}
	wg   sync.WaitGroup
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, tty: isTerminal(w), start: time.Now(), stop: make(chan struct{})}
	if p.tty {
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// step starts a new step; total > 0 draws a bar of add()ed units.
func (p *progress) step(total int64, unit, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.step = fmt.Sprintf(format, args...)
	p.mu.total, p.mu.unit = total, unit
	p.done.Store(0)
	if p.tty {
		p.drawLocked()
		return
	}
	fmt.Fprintf(p.w, "[%6.1fs] %s\n", time.Since(p.start).Seconds(), p.mu.step)
}

// add counts n units of the current step.
func (p *progress) add(n int64) { p.done.Add(n) }

// logf prints a line of its own (above the live line on a terminal).
func (p *progress) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.mu.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "[%6.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
	if p.tty {
		p.drawLocked()
	}
}

func (p *progress) drawLocked() {
	if p.mu.step == "" {
		return
	}
	step := []rune(p.mu.step)
	if len(step) > maxStepWidth { // keep the line within 100 columns: a wrapped line cannot be redrawn
		step = append(step[:maxStepWidth-1], '…')
	}
	line := fmt.Sprintf("[%6.1fs] %s", time.Since(p.start).Seconds(), string(step))
	if p.mu.total > 0 {
		const width = 20
		done := min(p.done.Load(), p.mu.total)
		fill := int(done * width / p.mu.total)
		line += fmt.Sprintf("  %s%s %s/%s %s", strings.Repeat("█", fill), strings.Repeat("░", width-fill),
			human(float64(done)), human(float64(p.mu.total)), p.mu.unit)
	}
	fmt.Fprint(p.w, "\r\033[K"+line)
	p.mu.drawn = true
}

const maxStepWidth = 56

// close ends the live line.
func (p *progress) close() {
	if !p.tty {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
