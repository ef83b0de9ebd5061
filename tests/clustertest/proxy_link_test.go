package clustertest

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestLink: a link forwards while it passes, closes its connections when
// it drops, and holds the bytes while it blackholes until it passes again.
func TestLink(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	l := newLink(t, "test", echo.Addr().String())
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", l.addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	roundTrip := func(c net.Conn, r *bufio.Reader, msg string, within time.Duration) (string, error) {
		c.SetDeadline(time.Now().Add(within))
		defer c.SetDeadline(time.Time{})
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return "", err
		}
		return r.ReadString('\n')
	}

	c, r := dial()
	if got, err := roundTrip(c, r, "one", 10*time.Second); err != nil || got != "one\n" {
		t.Fatalf("passing: %q, %v", got, err)
	}

	l.set(blackhole)
	if got, err := roundTrip(c, r, "two", 200*time.Millisecond); err == nil {
		t.Fatalf("blackholed: answered %q", got)
	}
	held, heldR := dial() // accepted, not forwarded
	if _, err := held.Write([]byte("three\n")); err != nil {
		t.Fatal(err)
	}
	l.set(pass)
	held.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := heldR.ReadString('\n'); err != nil || got != "three\n" {
		t.Fatalf("a connection accepted while blackholed, after the link passes again: %q, %v", got, err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("bytes held while blackholed, after the link passes again: %q, %v", got, err)
	}

	l.set(drop)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("dropped: the connection is still open")
	}
	d, dr := dial()
	if _, err := roundTrip(d, dr, "four", 10*time.Second); err == nil {
		t.Fatal("dropped: a new connection was forwarded")
	}
	l.set(pass)
	e, er := dial()
	if got, err := roundTrip(e, er, "five", 10*time.Second); err != nil || got != "five\n" {
		t.Fatalf("passing again: %q, %v", got, err)
	}
}

// TestCutOffAcks: an acknowledgement by a cut-off node counts against it
// when the call was first sent after the cut and answered before the heal.
func TestCutOffAcks(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000+int64(s), 0) }
	h := newHistory()
	h.cutOff = []cutOff{{"isolate-leader", "n1", at(10), at(20)}}
	h.ackLog = []ackRecord{
		{"n1", at(5), at(12)},  // a retry of a call sent before the cut
		{"n1", at(11), at(21)}, // answered after the heal
		{"n2", at(11), at(12)}, // another node
		{"n1", at(11), at(19)}, // the one that counts
	}
	if n, what := h.cutOffAcks(); n != 1 {
		t.Fatalf("cutOffAcks = %d (%q), want 1", n, what)
	}
}
