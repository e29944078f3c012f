package projection_test

import (
	"testing"
	"time"
)

// Writer leases are counted held until their TTL passes, then lapsed
// until released or taken over.
func TestLeaseGauges(t *testing.T) {
	e := newEnv(t)
	want := func(held, lapsed float64) {
		t.Helper()
		g := map[string]float64{}
		for _, v := range e.l.FSM.Gauges() {
			g[v.Domain+" "+v.Name+"/"+v.Status] = v.Value
		}
		if h, ok := g["projection projection_leases/held"]; !ok || h != held || g["projection projection_leases/lapsed"] != lapsed {
			t.Fatalf("gauges %v; want %v held, %v lapsed", g, held, lapsed)
		}
	}
	want(0, 0)
	e.setTTL(10_000)
	a, b := e.target("a"), e.target("b")
	e.acquire(a)
	e.acquire(b)
	want(2, 0)
	// Past the TTL, as of the next command's FSM time.
	e.l.Advance(11 * time.Second)
	e.target("c")
	want(0, 2)
	e.acquire(a)
	want(1, 1)
}
