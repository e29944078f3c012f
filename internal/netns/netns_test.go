package netns_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/netns"
)

// echo serves, in member e's namespace, one line naming e per connection.
func echo(t *testing.T, nw *netns.Net, e int) string {
	t.Helper()
	l, err := nw.Listen(e, "tcp", nw.Addr(e)+":7000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "n%d\n", e)
			c.Close()
		}
	}()
	return nw.Addr(e) + ":7000"
}

// isTimeout: the dial's deadline passed (what a silent drop looks like).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// reach dials addr from the client namespace within d and reads the line.
func reach(nw *netns.Net, addr string, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := nw.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	return strings.TrimSpace(string(b)), err
}

func TestCutHealAndLinkDown(t *testing.T) {
	nw := netns.New(t, 2)
	a0, a1 := echo(t, nw, 0), echo(t, nw, 1)
	for _, tc := range []struct{ addr, want string }{{a0, "n0"}, {a1, "n1"}} {
		if got, err := reach(nw, tc.addr, 2*time.Second); err != nil || got != tc.want {
			t.Fatalf("healed: %s answered %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}

	nw.Cut(netns.Client, 0)
	if nw.Faults() != "cut client-n1" {
		t.Errorf("Faults = %q", nw.Faults())
	}
	start := time.Now()
	_, err := reach(nw, a0, 500*time.Millisecond)
	if !isTimeout(err) {
		t.Errorf("cut: dial n0 = %v, want a timeout (packets dropped silently)", err)
	}
	if time.Since(start) < 400*time.Millisecond {
		t.Errorf("cut: the dial failed after %v, before its deadline: not a silent drop", time.Since(start))
	}
	if got, err := reach(nw, a1, 2*time.Second); err != nil || got != "n1" {
		t.Errorf("cut client-n0 also cut n1: %q, %v", got, err)
	}

	nw.Heal(netns.Client, 0)
	if got, err := reach(nw, a0, 2*time.Second); err != nil || got != "n0" {
		t.Errorf("healed: n0 answered %q, %v", got, err)
	}

	nw.LinkDown(netns.Client, 1)
	_, err = reach(nw, a1, 2*time.Second)
	var op *net.OpError
	if !errors.As(err, &op) || isTimeout(err) {
		t.Errorf("link down: dial n1 = %v, want an immediate network error", err)
	}
	nw.Cut(netns.Client, 1) // a cut while the link is down stands after LinkUp
	nw.LinkUp(netns.Client, 1)
	if _, err := reach(nw, a1, 300*time.Millisecond); !isTimeout(err) {
		t.Errorf("cut, then link up: dial n1 = %v, want a timeout", err)
	}
	nw.HealAll()
	if got, err := reach(nw, a1, 2*time.Second); err != nil || got != "n1" || nw.Faults() != "healed" {
		t.Errorf("after HealAll: n1 answered %q, %v; faults %q", got, err, nw.Faults())
	}
}

// TestMembersReachEachOther checks member-to-member routes and a cut
// between two members only, with processes run in the namespaces by Cmd.
func TestMembersReachEachOther(t *testing.T) {
	nw := netns.New(t, 3)
	a1 := echo(t, nw, 1)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := func(from int) string {
		cmd := nw.Cmd(from, bin, "-test.run", "^TestProbeHelper$")
		cmd.Env = append(os.Environ(), "NETNS_PROBE="+a1)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := probe(0); !strings.Contains(out, "answer n1") {
		t.Fatalf("n0 -> n1 healed: %s", out)
	}
	nw.Cut(0, 1)
	if out := probe(0); !strings.Contains(out, "no answer") {
		t.Errorf("n0 -> n1 cut: %s", out)
	}
	if out := probe(2); !strings.Contains(out, "answer n1") {
		t.Errorf("n2 -> n1 while n0-n1 is cut: %s", out)
	}
}

// TestProbeHelper is run by TestMembersReachEachOther inside a namespace:
// it dials NETNS_PROBE and prints what it heard.
func TestProbeHelper(t *testing.T) {
	addr := os.Getenv("NETNS_PROBE")
	if addr == "" {
		t.Skip("run by TestMembersReachEachOther")
	}
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		fmt.Println("no answer:", err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(c)
	fmt.Println("answer", strings.TrimSpace(string(b)))
}
