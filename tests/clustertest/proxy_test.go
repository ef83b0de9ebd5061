package clustertest

import (
	"net"
	"sync"
	"testing"
)

// linkMode is what a link does with the traffic it carries.
type linkMode int

const (
	// pass forwards every byte, both ways.
	pass linkMode = iota
	// drop closes every connection of the link, and each new one as soon
	// as it is accepted: the other side sees its connection reset.
	drop
	// blackhole forwards nothing: connections stay open, new ones are
	// accepted, and the bytes sent either way are held, as on a network
	// that loses every packet. When the link passes again the held bytes
	// go on, as TCP's retransmissions would deliver them.
	blackhole
)

func (m linkMode) String() string {
	return [...]string{"pass", "drop", "blackhole"}[m]
}

// link is a TCP proxy for one directed link: one process's connections to
// another (a follower's fetches from its leader, a node's sessions with
// the metadata store). The harness points the process at the link's
// address instead of the other's (--fault-dial, the --meta URL).
type link struct {
	name string
	ln   net.Listener
	to   string

	mu struct {
		sync.Mutex
		mode    linkMode
		changed chan struct{} // closed at the next change of mode
		pipes   map[*pipe]struct{}
		closed  bool
	}
}

// pipe is one proxied connection.
type pipe struct {
	client net.Conn
	done   chan struct{} // closed by close

	mu struct {
		sync.Mutex
		upstream net.Conn // nil until the link first passes
		closed   bool
	}
}

// connect sets the pipe's other side; false (and up closed) when the pipe
// closed meanwhile.
func (p *pipe) connect(up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		up.Close()
		return false
	}
	p.mu.upstream = up
	return true
}

func (p *pipe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return
	}
	p.mu.closed = true
	close(p.done)
	p.client.Close()
	if p.mu.upstream != nil {
		p.mu.upstream.Close()
	}
}

// newLink listens on a free loopback port and forwards to `to` until the
// test ends.
func newLink(t *testing.T, name, to string) *link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &link{name: name, ln: ln, to: to}
	l.mu.changed = make(chan struct{})
	l.mu.pipes = map[*pipe]struct{}{}
	go l.accept()
	t.Cleanup(l.close)
	return l
}

func (l *link) addr() string { return l.ln.Addr().String() }

func (l *link) mode() linkMode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.mode
}

// set changes what the link does; dropping closes its connections at once.
func (l *link) set(m linkMode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m == l.mu.mode {
		return
	}
	l.mu.mode = m
	close(l.mu.changed)
	l.mu.changed = make(chan struct{})
	if m == drop {
		for p := range l.mu.pipes {
			p.close()
			delete(l.mu.pipes, p)
		}
	}
}

func (l *link) close() {
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.closed = true
	for p := range l.mu.pipes {
		p.close()
	}
}

func (l *link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return // closed with the test
		}
		p := &pipe{client: c, done: make(chan struct{})}
		l.mu.Lock()
		if l.mu.closed || l.mu.mode == drop {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.mu.pipes[p] = struct{}{}
		l.mu.Unlock()
		go l.serve(p)
	}
}

// serve connects p to the other side once the link passes, then pumps
// bytes both ways through the link's gate until either side closes.
func (l *link) serve(p *pipe) {
	defer func() {
		p.close()
		l.mu.Lock()
		delete(l.mu.pipes, p)
		l.mu.Unlock()
	}()
	if !l.gate(p) {
		return
	}
	up, err := net.Dial("tcp", l.to)
	if err != nil {
		return // the other process is down: the client sees its connection closed
	}
	if !p.connect(up) {
		return // dropped while dialing
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.pump(p, up, p.client) }()
	go func() { defer wg.Done(); l.pump(p, p.client, up) }()
	wg.Wait()
}

// pump copies src to dst, each chunk only once the link lets it through.
func (l *link) pump(p *pipe, dst, src net.Conn) {
	defer p.close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !l.gate(p) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the pipe closes both sides
		}
	}
}

// gate waits while the link holds traffic: true once it passes, false
// when it drops or p closed.
func (l *link) gate(p *pipe) bool {
	for {
		l.mu.Lock()
		m, changed := l.mu.mode, l.mu.changed
		l.mu.Unlock()
		switch m {
		case pass:
			return true
		case drop:
			return false
		}
		select {
		case <-changed:
		case <-p.done:
			return false
		}
	}
}
