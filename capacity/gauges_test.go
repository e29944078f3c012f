package capacity_test

import (
	"context"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// gaugeValues is the FSM's gauges as name/status -> value.
func gaugeValues(l *fsmtest.Local) map[string]float64 {
	out := map[string]float64{}
	for _, g := range l.FSM.Gauges() {
		out[g.Domain+" "+g.Name+"/"+g.Status] = g.Value
	}
	return out
}

// Active leases are counted held until their expiry passes, then lapsed
// until something ends them; released ones are not counted.
func TestLeaseGauges(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	want := func(held, lapsed float64) {
		t.Helper()
		g := gaugeValues(l)
		if g["capacity capacity_leases/held"] != held || g["capacity capacity_leases/lapsed"] != lapsed {
			t.Fatalf("gauges %v; want %v held, %v lapsed", g, held, lapsed)
		}
	}
	want(0, 0)
	cell(t, s, "gpu-1", map[string]uint64{"gpu": 4})
	res, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, acquire("k2", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 1})); err != nil {
		t.Fatal(err)
	}
	want(2, 0)
	l0 := res.Leases[0]
	if _, err := s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a",
		Leases: []capacity.LeaseRef{{LeaseID: l0.LeaseID, LeaseEpoch: l0.LeaseEpoch, Fence: l0.Fence}}}); err != nil {
		t.Fatal(err)
	}
	want(1, 0)
	// Past the TTL (10 s), as of the next command's FSM time.
	l.Advance(11 * time.Second)
	cell(t, s, "gpu-2", map[string]uint64{"gpu": 1})
	want(0, 1)
}
