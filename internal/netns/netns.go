package netns

import (
	"bytes"
	"fmt"
	"github.com/arbiterhq/arbiter/internal/privileged"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Client names the clients' namespace where a method takes an endpoint;
// members are 0, 1, ... n-1.
const Client = -1

// MaxMembers bounds a network: addresses are 10.77.0.1 up to
// 10.77.0.MaxMembers, the client is 10.77.0.100.
const MaxMembers = 9

// sinkMAC is the static neighbour a cut route points at: no interface
// has it, so the sink's other end drops what arrives, silently.
const sinkMAC = "02:00:00:00:00:01"

// Net is a network of namespaces: members 0..n-1 and the client.
type Net struct {
	t      testing.TB
	prefix string // unique per Net, the start of every namespace's name
	n      int

	mu   sync.Mutex
	cut  map[[2]int]bool // pairs (lower endpoint first) whose routes sink
	down map[[2]int]bool // pairs whose link is down
}

// New creates n member namespaces and the client's, linked pairwise, and
// removes them when t ends. It skips t where namespaces cannot be made.
func New(t testing.TB, n int) *Net {
	t.Helper()
	if n < 1 || n > MaxMembers {
		t.Fatalf("netns: %d members, want 1..%d", n, MaxMembers)
	}
	if reason := unavailable(); reason != "" {
		privileged.Unavailable(t, "netns: network namespaces cannot be made here: "+reason)
	}
	nw := &Net{t: t, prefix: fmt.Sprintf("arb%d-%d", os.Getpid(), time.Now().UnixNano()%100000), n: n,
		cut: map[[2]int]bool{}, down: map[[2]int]bool{}}
	t.Cleanup(nw.remove)
	for _, e := range nw.endpoints() {
		nw.ip("netns", "add", nw.Name(e))
		nw.ip("-n", nw.Name(e), "link", "set", "lo", "up")
		nw.ip("-n", nw.Name(e), "addr", "add", nw.Addr(e)+"/32", "dev", "lo")
		nw.ip("-n", nw.Name(e), "link", "add", "sink0", "type", "veth", "peer", "name", "sink1")
		nw.ip("-n", nw.Name(e), "link", "set", "sink0", "up")
		nw.ip("-n", nw.Name(e), "link", "set", "sink1", "up")
	}
	for _, p := range nw.pairs() {
		a, b := p[0], p[1]
		nw.ip("link", "add", dev(b), "netns", nw.Name(a), "type", "veth", "peer", "name", dev(a), "netns", nw.Name(b))
		nw.setLink(a, b, "up")
		nw.route(a, b, false)
		nw.route(b, a, false)
	}
	return nw
}

// unavailable says why namespaces cannot be made, or "".
func unavailable() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip(8) on PATH"
	}
	probe := fmt.Sprintf("arbprobe%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns add: %v: %s", err, bytes.TrimSpace(out))
	}
	defer exec.Command("ip", "netns", "del", probe).Run()
	if out, err := exec.Command("ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1").CombinedOutput(); err != nil {
		return fmt.Sprintf("veth: %v: %s", err, bytes.TrimSpace(out))
	}
	return ""
}

// Name is the namespace of endpoint e.
func (nw *Net) Name(e int) string {
	if e == Client {
		return nw.prefix + "-c"
	}
	return fmt.Sprintf("%s-n%d", nw.prefix, e)
}

// Addr is endpoint e's address.
func (nw *Net) Addr(e int) string {
	if e == Client {
		return "10.77.0.100"
	}
	return fmt.Sprintf("10.77.0.%d", e+1)
}

// Cmd runs name with args inside endpoint e's namespace. ip netns exec
// execs the program, so cmd.Process is the program itself.
func (nw *Net) Cmd(e int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", nw.Name(e), name}, args...)...)
}

// Cut drops every packet between a and b, silently, in both directions.
func (nw *Net) Cut(a, b int) { nw.setCut(a, b, true) }

// Heal undoes Cut between a and b.
func (nw *Net) Heal(a, b int) { nw.setCut(a, b, false) }

// Isolate cuts member i from every other member (not from the client,
// so the test still sees what the isolated member answers).
func (nw *Net) Isolate(i int) {
	for j := range nw.n {
		if j != i {
			nw.Cut(i, j)
		}
	}
}

// HealAll undoes every Cut and LinkDown.
func (nw *Net) HealAll() {
	nw.mu.Lock()
	cut, down := sortedPairs(nw.cut), sortedPairs(nw.down)
	nw.mu.Unlock()
	for _, p := range cut {
		nw.Heal(p[0], p[1])
	}
	for _, p := range down {
		nw.LinkUp(p[0], p[1])
	}
}

// LinkDown takes the link between a and b down: unlike Cut, each side
// learns at once (its route goes, sends fail with "network unreachable").
func (nw *Net) LinkDown(a, b int) {
	p := pair(a, b)
	nw.mu.Lock()
	nw.down[p] = true
	nw.mu.Unlock()
	nw.setLink(p[0], p[1], "down")
}

// LinkUp undoes LinkDown, restoring the routes the link carried.
func (nw *Net) LinkUp(a, b int) {
	p := pair(a, b)
	nw.mu.Lock()
	delete(nw.down, p)
	sunk := nw.cut[p]
	nw.mu.Unlock()
	nw.setLink(p[0], p[1], "up")
	nw.route(p[0], p[1], sunk)
	nw.route(p[1], p[0], sunk)
}

// Faults describes what is cut and down now, for logs.
func (nw *Net) Faults() string {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var parts []string
	for _, p := range sortedPairs(nw.cut) {
		parts = append(parts, fmt.Sprintf("cut %s-%s", label(p[0]), label(p[1])))
	}
	for _, p := range sortedPairs(nw.down) {
		parts = append(parts, fmt.Sprintf("down %s-%s", label(p[0]), label(p[1])))
	}
	if len(parts) == 0 {
		return "healed"
	}
	return strings.Join(parts, ", ")
}

func (nw *Net) setCut(a, b int, sunk bool) {
	p := pair(a, b)
	nw.mu.Lock()
	if sunk {
		nw.cut[p] = true
	} else {
		delete(nw.cut, p)
	}
	down := nw.down[p]
	nw.mu.Unlock()
	if down {
		return // LinkUp puts the routes back as the cut then stands
	}
	nw.route(p[0], p[1], sunk)
	nw.route(p[1], p[0], sunk)
}

// route points from's route to to's address at their link, or, sunk, at
// the sink: a veth to nowhere with a permanent neighbour entry, so sends
// succeed and the packets vanish (a blackhole route would fail them
// locally).
func (nw *Net) route(from, to int, sunk bool) {
	ns := nw.Name(from)
	if sunk {
		nw.ip("-n", ns, "neigh", "replace", nw.Addr(to), "lladdr", sinkMAC, "dev", "sink0", "nud", "permanent")
		nw.ip("-n", ns, "route", "replace", nw.Addr(to)+"/32", "dev", "sink0", "src", nw.Addr(from))
		return
	}
	nw.ip("-n", ns, "route", "replace", nw.Addr(to)+"/32", "dev", dev(to), "src", nw.Addr(from))
}

func (nw *Net) setLink(a, b int, state string) {
	nw.ip("-n", nw.Name(a), "link", "set", dev(b), state)
	nw.ip("-n", nw.Name(b), "link", "set", dev(a), state)
}

// remove deletes every namespace this Net made; deleting a namespace
// deletes its links and stops nothing (the test stops its processes).
func (nw *Net) remove() {
	for _, e := range nw.endpoints() {
		if out, err := exec.Command("ip", "netns", "del", nw.Name(e)).CombinedOutput(); err != nil &&
			!bytes.Contains(out, []byte("No such file")) {
			nw.t.Errorf("netns: removing %s: %v: %s", nw.Name(e), err, bytes.TrimSpace(out))
		}
	}
}

func (nw *Net) ip(args ...string) {
	nw.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		nw.t.Fatalf("netns: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// endpoints lists the client then the members.
func (nw *Net) endpoints() []int {
	out := []int{Client}
	for i := range nw.n {
		out = append(out, i)
	}
	return out
}

// pairs lists every pair of endpoints, lower first.
func (nw *Net) pairs() [][2]int {
	var out [][2]int
	eps := nw.endpoints()
	for i, a := range eps {
		for _, b := range eps[i+1:] {
			out = append(out, pair(a, b))
		}
	}
	return out
}

// dev is the name, in any namespace, of the link to endpoint e.
func dev(e int) string {
	if e == Client {
		return "toc"
	}
	return fmt.Sprintf("to%d", e)
}

// label names endpoint e in Faults: "client", or member i as n<i+1>, as
// processes are usually named.
func label(e int) string {
	if e == Client {
		return "client"
	}
	return fmt.Sprintf("n%d", e+1)
}

func pair(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

func sortedPairs(m map[[2]int]bool) [][2]int {
	out := make([][2]int, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	return out
}
