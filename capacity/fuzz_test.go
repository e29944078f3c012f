package capacity_test

import (
	"context"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// capTypes are the command types the fuzz target wraps payloads in.
var capTypes = []log.Type{capacity.CmdAcquire, capacity.CmdRenew, capacity.CmdRelease, capacity.CmdReclaim, capacity.CmdUpdateCell}

// fuzzPrincipals are who a fuzzed command runs as.
var fuzzPrincipals = []identity.Principal{
	{},
	{ID: "p1", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}},
	{ID: "r", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}},
	{ID: "ctl", Tenants: []string{"*"}, Roles: []string{identity.RoleController}},
	{ID: "o", Tenants: []string{"u"}, Roles: []string{identity.RoleMember}},
}

// capSeed is the log of the state every fuzz input starts from: cells in
// two tenants, leases active (one of them named, one of p1's), released,
// due but not reclaimed, and keyed results in the ledger. A gated seed
// enables every command version first and also holds a cell and a lease
// of tenant t in graph g2, under the ids of the default graph's.
type capSeed struct {
	log []*raft.Log
	now int64 // the proposer's clock after the seed
}

func newCapSeed(t testing.TB, gated bool) capSeed {
	l, err := fsmtest.New(capacity.Module())
	if err != nil {
		t.Fatal(err)
	}
	s := capacity.NewService(l, l)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if gated {
		must(nil, l.Enable(fsm.ServedBy(capacity.Module())))
		must(s.UpdateCell(ctx, capacity.UpdateCellRequest{TenantRef: "t", GraphRef: "g2", Cell: capacity.CellSpec{CellID: "c1", Capacities: map[string]uint64{"x": 2}}}))
		g2 := acquire("g2", capacity.Demand{CellID: "c1", ResourceClass: "x", Amount: 1})
		g2.GraphRef, g2.LeaseID = "g2", "L1"
		must(s.Acquire(ctx, g2))
	}
	for _, c := range []capacity.UpdateCellRequest{
		{TenantRef: "t", Cell: capacity.CellSpec{CellID: "c1", Capacities: map[string]uint64{"x": 10, "y": 5}}},
		{TenantRef: "t", Cell: capacity.CellSpec{CellID: "c2", Capacities: map[string]uint64{"x": 3}}},
		{TenantRef: "u", Cell: capacity.CellSpec{CellID: "c1", Capacities: map[string]uint64{"x": 4}}},
	} {
		c.SchemaVersion = "1"
		must(s.UpdateCell(ctx, c))
	}
	two := acquire("two", capacity.Demand{CellID: "c1", ResourceClass: "x", Amount: 2}, capacity.Demand{CellID: "c2", ResourceClass: "x", Amount: 1})
	res, err := s.Acquire(ctx, two)
	must(res, err)
	named := acquire("named", capacity.Demand{CellID: "c1", ResourceClass: "y", Amount: 1})
	named.LeaseID, named.TTLMs = "L1", time.Hour.Milliseconds()
	must(s.Acquire(ctx, named))
	short := acquire("short", capacity.Demand{CellID: "c1", ResourceClass: "x", Amount: 1})
	short.TTLMs = 1
	must(s.Acquire(ctx, short))
	p1 := acquire("p1", capacity.Demand{CellID: "c1", ResourceClass: "x", Amount: 1})
	p1.OwnerDigest = capacity.OwnerDigest("p1")
	must(s.Acquire(fsm.WithPrincipal(ctx, fuzzPrincipals[1]), p1))
	must(s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", IdempotencyKey: "rel",
		Leases: []capacity.LeaseRef{refOf(res.Leases[1])}}))
	l.Advance(time.Second)
	must(s.Renew(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", IdempotencyKey: "ren",
		Leases: []capacity.LeaseRef{refOf(res.Leases[0])}}))
	return capSeed{log: l.Log(), now: fsmtest.Epoch + 1000}
}

// replica is a fresh FSM that has applied the seed log.
func (s capSeed) replica(t testing.TB) *fsm.FSM {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{capacity.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	f.ApplyBatch(s.log)
	return f
}

// fuzzPayloads are valid payloads of each command type, and broken ones.
func fuzzPayloads() map[log.Type][][]byte {
	ref := func(id string, epoch, fence uint64) capacity.LeaseRef {
		return capacity.LeaseRef{LeaseID: id, LeaseEpoch: epoch, Fence: fence}
	}
	d := func(cell, class string, amount uint64) capacity.Demand {
		return capacity.Demand{CellID: cell, ResourceClass: class, Amount: amount}
	}
	valid := map[log.Type][]any{
		capacity.CmdAcquire: {
			rawAcquire{TenantRef: "t", WorkItemID: "w", OwnerDigest: "owner-a", Demands: []capacity.Demand{d("c1", "x", 1)}, TTLMs: 1000},
			rawAcquire{TenantRef: "t", WorkItemID: "w", OwnerDigest: capacity.OwnerDigest("p1"), Demands: []capacity.Demand{d("c1", "x", 9), d("c2", "x", 1)}, TTLMs: 1000},
			rawAcquire{TenantRef: "t", WorkItemID: "w", OwnerDigest: "owner-a", Demands: []capacity.Demand{d("c1", "x", 1)}, LeaseID: "L1", TTLMs: 1000},
			rawAcquire{TenantRef: "t", WorkItemID: "w", OwnerDigest: "owner-a", Demands: []capacity.Demand{d("nowhere", "x", 1)}, TTLMs: 1000},
			rawAcquire{TenantRef: "u", WorkItemID: "w", OwnerDigest: "owner-a", Demands: []capacity.Demand{d("c1", "x", 4)}, TTLMs: 1, CostBudgetMicros: i64(5)},
			rawAcquire{TenantRef: "t", GraphRef: "g2", WorkItemID: "w", OwnerDigest: "owner-a", Demands: []capacity.Demand{d("c1", "x", 1)}, TTLMs: 1000},
			rawAcquire{TenantRef: "t", GraphRef: "default", WorkItemID: "w", OwnerDigest: "owner-a", Demands: []capacity.Demand{d("c1", "x", 1)}, TTLMs: 1000},
		},
		capacity.CmdRenew: {
			rawLeases{TenantRef: "t", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref("lease-4-0", 2, 1)}},
			rawLeases{TenantRef: "t", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref("lease-4-0", 2, 1), ref("L1", 1, 2)}, TTLMs: 5},
			rawLeases{TenantRef: "t", OwnerDigest: capacity.OwnerDigest("p1"), Leases: []capacity.LeaseRef{ref("lease-7-0", 1, 4)}},
			rawLeases{TenantRef: "t", GraphRef: "g2", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref("L1", 1, 48)}},
		},
		capacity.CmdRelease: {
			rawLeases{TenantRef: "t", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref("L1", 1, 2), ref("lease-6-0", 1, 3)}},
			rawLeases{TenantRef: "t", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref("lease-4-1", 1, 1)}},
			rawLeases{TenantRef: "t", GraphRef: "g2", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref("L1", 1, 48)}},
		},
		capacity.CmdReclaim: {
			rawReclaim{TenantRef: "t", MaxCount: 1},
			rawReclaim{TenantRef: "t", CellID: "c1", MaxCount: 128, Cursor: "reclaim.AAAAAAAAAAAAAA"},
			rawReclaim{TenantRef: "t", GraphRef: "g2", MaxCount: 4},
		},
		capacity.CmdUpdateCell: {
			rawUpdate{TenantRef: "t", Cell: capacity.CellSpec{CellID: "c1", Capacities: map[string]uint64{"x": 1}}},
			rawUpdate{TenantRef: "t", Cell: capacity.CellSpec{CellID: "c3", Capacities: map[string]uint64{"z": 1}}, ExpectedEpoch: u64(0)},
			rawUpdate{TenantRef: "u", Cell: capacity.CellSpec{CellID: "c1", Capacities: map[string]uint64{"x": 9}}, ExpectedEpoch: u64(5)},
			rawUpdate{TenantRef: "t", GraphRef: "g2", Cell: capacity.CellSpec{CellID: "c1", Capacities: map[string]uint64{"x": 0}}},
		},
	}
	return fsmtest.PayloadVariants(valid)
}

// FuzzApplyCapacity applies arbitrary payload bytes, wrapped in a valid
// envelope of each capacity command type (at version 1 to 3, keyed in one
// of a few scopes), after the seed state, gated or not.
//
// Whatever the bytes: no panic, recovered or not; the capacity tables keep
// their invariants; a failure (or a replay) changes nothing but FSM
// bookkeeping; a denial of renew, release or update changes no capacity
// table and a denied acquire grants nothing and moves no fence; and a
// second replica applying the same entry reaches the same state.
func FuzzApplyCapacity(f *testing.F) {
	for typ, payloads := range fuzzPayloads() {
		for i, p := range payloads {
			kind := uint8(0)
			for k, ct := range capTypes {
				if ct == typ {
					kind = uint8(k)
				}
			}
			// Keyed seeds only for the commands the service keys; the
			// fuzzer still tries keys on every type (a raw client may).
			key := ""
			if i%4 == 0 && typ != capacity.CmdUpdateCell && typ != capacity.CmdReclaim {
				key = "fuzz-key"
			}
			f.Add(kind, p, uint8(i), key, uint16(i*7), false)
			f.Add(kind, p, uint8(i), key, uint16(i*7+1), true)
		}
	}
	seeds := map[bool]capSeed{false: newCapSeed(f, false), true: newCapSeed(f, true)}
	notMeta := func(table string) bool { return table != "meta" }
	ops := map[log.Type]string{capacity.CmdAcquire: "acquire", capacity.CmdRenew: "renew", capacity.CmdRelease: "release"}
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte, who uint8, key string, advance uint16, gated bool) {
		seed := seeds[gated]
		typ := capTypes[int(kind)%len(capTypes)]
		cmd := log.Command{Type: typ, Version: 1 + uint16(advance%3), Stamp: seed.now + int64(advance)*10,
			Principal: fuzzPrincipals[int(who)%len(fuzzPrincipals)], Payload: payload}
		if key != "" {
			scopes := []string{"capacity/fuzz", capGraphScope(ops[typ], "t", ""), capGraphScope(ops[typ], "t", "g2")}
			cmd.IdemScope, cmd.IdemKey = scopes[int(who/8)%len(scopes)], key
		}
		data, err := log.Encode(cmd)
		if err != nil {
			t.Skip("not a valid envelope:", err)
		}
		a := seed.replica(t)
		before := readStored(t, a)
		entry := &raft.Log{Index: a.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}
		res, ok := a.Apply(entry).(*fsm.Response)
		if !ok || res == nil {
			t.Fatalf("Apply returned no *fsm.Response")
		}
		if n := a.Panics(); n != 0 {
			t.Fatalf("%d handler panics", n)
		}
		after := checkStored(t, a)
		switch {
		case res.Err != nil || res.Replayed:
			if after.Digest(notMeta) != before.Digest(notMeta) {
				t.Fatalf("a failed or replayed command (%v, replayed %t) changed the state", res.Err, res.Replayed)
			}
		default:
			checkDenial(t, cmd.Type, res.Result, before, after)
		}
		b := seed.replica(t)
		resB := b.Apply(entry).(*fsm.Response)
		if errCode(res) != errCode(resB) || res.Replayed != resB.Replayed {
			t.Fatalf("replicas answered %v/%t and %v/%t", res.Err, res.Replayed, resB.Err, resB.Replayed)
		}
		_, ha, errA := a.StateHash()
		_, hb, errB := b.StateHash()
		if errA != nil || errB != nil || ha != hb {
			t.Fatalf("replicas reached different states after the same entry (%v %v)", errA, errB)
		}
	})
}

func errCode(r *fsm.Response) string {
	if r.Err == nil {
		return ""
	}
	return string(r.Err.Code)
}

// checkDenial checks what a command that returned a result may have done.
func checkDenial(t *testing.T, typ log.Type, result []byte, before, after storedState) {
	t.Helper()
	var d capacity.Decision
	switch typ {
	case capacity.CmdAcquire:
		var r capacity.AcquireResult
		mustDecode(t, result, &r)
		d = r.Decision
		if r.Decision == capacity.Granted {
			return
		}
		// A denied acquire may have reclaimed expired leases, nothing else.
		fences := map[[3]string]uint64{}
		for _, c := range before.Cells {
			fences[[3]string{c.GraphRef, c.TenantRef, c.CellID}] = c.LastFence
		}
		for _, c := range after.Cells {
			if fences[[3]string{c.GraphRef, c.TenantRef, c.CellID}] != c.LastFence {
				t.Fatalf("a denied acquire (%s) moved the fence of cell %q/%s/%s", r.Decision, c.GraphRef, c.TenantRef, c.CellID)
			}
		}
		if len(after.Leases) != len(before.Leases) || len(r.Leases) != 0 {
			t.Fatalf("a denied acquire (%s) added leases", r.Decision)
		}
	case capacity.CmdRenew, capacity.CmdRelease:
		var r capacity.LeasesResult
		mustDecode(t, result, &r)
		d = r.Decision
	case capacity.CmdUpdateCell:
		var r capacity.UpdateCellResult
		mustDecode(t, result, &r)
		d = r.Decision
	case capacity.CmdReclaim:
		var r capacity.ReclaimResult
		mustDecode(t, result, &r)
		if r.Decision != capacity.Granted {
			t.Fatalf("reclaim decided %q", r.Decision)
		}
		return
	}
	if d != capacity.Granted && typ != capacity.CmdAcquire && after.capacityDigest() != before.capacityDigest() {
		t.Fatalf("a denied command %d (%s) changed the capacity tables", typ, d)
	}
}

func mustDecode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := log.Unmarshal(b, v); err != nil {
		t.Fatalf("undecodable result %x: %v", b, err)
	}
}
