package capacity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

// The payloads of the capacity commands and queries, written out from
// their msgpack field names so that tests can propose a command the
// service would refuse to build: the FSM must validate again.
type (
	rawAcquire struct {
		TenantRef        string            `msgpack:"tenant_ref"`
		GraphRef         string            `msgpack:"graph_ref,omitempty"`
		WorkItemID       string            `msgpack:"work_item_id"`
		OwnerDigest      string            `msgpack:"owner_digest"`
		Priority         int32             `msgpack:"priority"`
		Demands          []capacity.Demand `msgpack:"demands"`
		LeaseID          string            `msgpack:"lease_id"`
		TTLMs            int64             `msgpack:"ttl_ms"`
		CostBudgetMicros *int64            `msgpack:"cost_budget_micros"`
		TokenBudget      *int64            `msgpack:"token_budget"`
	}
	rawLeases struct {
		TenantRef   string              `msgpack:"tenant_ref"`
		GraphRef    string              `msgpack:"graph_ref,omitempty"`
		OwnerDigest string              `msgpack:"owner_digest"`
		Leases      []capacity.LeaseRef `msgpack:"leases"`
		TTLMs       int64               `msgpack:"ttl_ms"`
	}
	rawReclaim struct {
		TenantRef string `msgpack:"tenant_ref"`
		GraphRef  string `msgpack:"graph_ref,omitempty"`
		CellID    string `msgpack:"cell_id"`
		MaxCount  int    `msgpack:"max_count"`
		Cursor    string `msgpack:"cursor"`
	}
	rawUpdate struct {
		TenantRef     string            `msgpack:"tenant_ref"`
		GraphRef      string            `msgpack:"graph_ref,omitempty"`
		Cell          capacity.CellSpec `msgpack:"cell"`
		ExpectedEpoch *uint64           `msgpack:"expected_epoch"`
	}
	rawRead struct {
		TenantRef string `msgpack:"tenant_ref"`
		GraphRef  string `msgpack:"graph_ref,omitempty"`
		CellID    string `msgpack:"cell_id"`
		LeaseID   string `msgpack:"lease_id"`
		MaxCount  int    `msgpack:"max_count"`
		Cursor    string `msgpack:"cursor"`
	}
)

func rawOfAcquire(r capacity.AcquireRequest) rawAcquire {
	return rawAcquire{TenantRef: r.TenantRef, WorkItemID: r.WorkItemID, OwnerDigest: r.OwnerDigest, Priority: r.Priority,
		Demands: r.Demands, LeaseID: r.LeaseID, TTLMs: r.TTLMs, CostBudgetMicros: r.CostBudgetMicros, TokenBudget: r.TokenBudget}
}

func rawOfLeases(r capacity.LeasesRequest) rawLeases {
	return rawLeases{TenantRef: r.TenantRef, OwnerDigest: r.OwnerDigest, Leases: r.Leases, TTLMs: r.TTLMs}
}

// proposeRaw applies a command built from payload, bypassing the service.
func proposeRaw(t *testing.T, ctx context.Context, l *fsmtest.Local, typ log.Type, payload any) *fsm.Response {
	t.Helper()
	res, err := l.Propose(ctx, log.Command{Type: typ, Version: 1, Payload: log.MustMarshal(payload)})
	if err != nil {
		t.Fatalf("propose: %v", err)
	}
	return res
}

var (
	long   = strings.Repeat("x", 513)
	max512 = strings.Repeat("y", 512)
)

// badIDs are identifiers every field must refuse.
var badIDs = map[string]string{"513 bytes": long, "a control character": "a\x01b", "a newline": "a\nb", "DEL": "a\x7fb", "invalid UTF-8": "a\xffb"}

func i64(v int64) *int64   { return &v }
func u64(v uint64) *uint64 { return &v }
func repeatDemand(d capacity.Demand, n int) []capacity.Demand {
	out := make([]capacity.Demand, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// boundsFixture is a service over a fresh FSM with cell "c" (x: 1e12) and
// one granted lease.
type boundsFixture struct {
	ctx   context.Context
	l     *fsmtest.Local
	s     *capacity.Service
	lease capacity.Lease
}

func newBoundsFixture(t *testing.T) *boundsFixture {
	t.Helper()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 1_000_000_000_000})
	res, err := s.Acquire(context.Background(), acquire("seed", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return &boundsFixture{ctx: context.Background(), l: l, s: s, lease: res.Leases[0]}
}

func (f *boundsFixture) ref() capacity.LeaseRef {
	return capacity.LeaseRef{LeaseID: f.lease.LeaseID, LeaseEpoch: f.lease.LeaseEpoch, Fence: f.lease.Fence}
}

func (f *boundsFixture) leasesReq(refs ...capacity.LeaseRef) capacity.LeasesRequest {
	return capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", Leases: refs}
}

// refuse requires call to fail invalid without proposing anything and
// without changing the state.
func (f *boundsFixture) refuse(t *testing.T, what string, call func() (any, error)) {
	t.Helper()
	f.refuseMaybeProposed(t, what, false, call)
}

// refuseMaybeProposed is refuse for a request the service may leave to
// the FSM to refuse (proposed true).
func (f *boundsFixture) refuseMaybeProposed(t *testing.T, what string, proposed bool, call func() (any, error)) {
	t.Helper()
	entries := len(f.l.Log())
	before := readStored(t, f.l.FSM).capacityDigest()
	res, err := call()
	if !errors.Is(err, errs.Invalid) {
		t.Errorf("%s: %v, want invalid", what, err)
	}
	if !isNil(res) {
		t.Errorf("%s: a result %+v with a bounds error", what, res)
	}
	if n := len(f.l.Log()); n != entries && !proposed {
		t.Errorf("%s: the service proposed %d command(s) for a request it must refuse itself", what, n-entries)
	}
	if readStored(t, f.l.FSM).capacityDigest() != before {
		t.Errorf("%s: the state changed", what)
	}
}

// refuseRaw requires the FSM to refuse a command the service would not
// build, with invalid and without a change.
func (f *boundsFixture) refuseRaw(t *testing.T, what string, typ log.Type, payload any) {
	t.Helper()
	before := readStored(t, f.l.FSM).capacityDigest()
	res := proposeRaw(t, f.ctx, f.l, typ, payload)
	if res.Err == nil || res.Err.Code != errs.CodeInvalid {
		t.Errorf("%s (proposed directly): %v %s, want invalid", what, res.Err, res.Result)
	}
	if readStored(t, f.l.FSM).capacityDigest() != before {
		t.Errorf("%s (proposed directly): the state changed", what)
	}
}

func isNil(v any) bool {
	switch r := v.(type) {
	case nil:
		return true
	case *capacity.AcquireResult:
		return r == nil
	case *capacity.LeasesResult:
		return r == nil
	case *capacity.ReclaimResult:
		return r == nil
	case *capacity.ReadResult:
		return r == nil
	case *capacity.UpdateCellResult:
		return r == nil
	}
	return false
}

func TestAcquireBounds(t *testing.T) {
	f := newBoundsFixture(t)
	d := capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}
	cases := map[string]func(*capacity.AcquireRequest){
		"17 demands":          func(r *capacity.AcquireRequest) { r.Demands = repeatDemand(d, 17) },
		"no demand":           func(r *capacity.AcquireRequest) { r.Demands = nil },
		"amount 0":            func(r *capacity.AcquireRequest) { r.Demands[0].Amount = 0 },
		"amount 1e9+1":        func(r *capacity.AcquireRequest) { r.Demands[0].Amount = capacity.MaxAmount + 1 },
		"ttl 0":               func(r *capacity.AcquireRequest) { r.TTLMs = 0 },
		"ttl -1":              func(r *capacity.AcquireRequest) { r.TTLMs = -1 },
		"ttl 24h+1ms":         func(r *capacity.AcquireRequest) { r.TTLMs = capacity.MaxTTL.Milliseconds() + 1 },
		"cost budget -1":      func(r *capacity.AcquireRequest) { r.CostBudgetMicros = i64(-1) },
		"cost budget 1e12+1":  func(r *capacity.AcquireRequest) { r.CostBudgetMicros = i64(capacity.MaxBudget + 1) },
		"token budget -1":     func(r *capacity.AcquireRequest) { r.TokenBudget = i64(-1) },
		"token budget 1e12+1": func(r *capacity.AcquireRequest) { r.TokenBudget = i64(capacity.MaxBudget + 1) },
		"priority above max":  func(r *capacity.AcquireRequest) { r.Priority = capacity.MaxPriority + 1 },
		"priority below min":  func(r *capacity.AcquireRequest) { r.Priority = -capacity.MaxPriority - 1 },
		"lease_id with 2 demands": func(r *capacity.AcquireRequest) {
			r.LeaseID, r.Demands = "mine", repeatDemand(d, 2)
		},
		"empty tenant_ref":     func(r *capacity.AcquireRequest) { r.TenantRef = "" },
		"empty work_item_id":   func(r *capacity.AcquireRequest) { r.WorkItemID = "" },
		"empty owner_digest":   func(r *capacity.AcquireRequest) { r.OwnerDigest = "" },
		"empty cell_id":        func(r *capacity.AcquireRequest) { r.Demands[0].CellID = "" },
		"empty resource_class": func(r *capacity.AcquireRequest) { r.Demands[0].ResourceClass = "" },
	}
	for name, bad := range badIDs {
		cases["tenant_ref with "+name] = func(r *capacity.AcquireRequest) { r.TenantRef = bad }
		cases["work_item_id with "+name] = func(r *capacity.AcquireRequest) { r.WorkItemID = bad }
		cases["owner_digest with "+name] = func(r *capacity.AcquireRequest) { r.OwnerDigest = bad }
		cases["cell_id with "+name] = func(r *capacity.AcquireRequest) { r.Demands[0].CellID = bad }
		cases["resource_class with "+name] = func(r *capacity.AcquireRequest) { r.Demands[0].ResourceClass = bad }
		cases["lease_id with "+name] = func(r *capacity.AcquireRequest) { r.LeaseID = bad }
	}
	for _, name := range sortedKeys(cases) {
		req := acquire("bad", d)
		cases[name](&req)
		f.refuse(t, "acquire with "+name, func() (any, error) { return f.s.Acquire(f.ctx, req) })
		f.refuseRaw(t, "acquire with "+name, capacity.CmdAcquire, rawOfAcquire(req))
	}
	// Transport fields: checked by the service only.
	for name, mutate := range map[string]func(*capacity.AcquireRequest){
		"schema_version 2":               func(r *capacity.AcquireRequest) { r.SchemaVersion = "2" },
		"no idempotency_key":             func(r *capacity.AcquireRequest) { r.IdempotencyKey = "" },
		"idempotency_key of 513 bytes":   func(r *capacity.AcquireRequest) { r.IdempotencyKey = long },
		"idempotency_key with a control": func(r *capacity.AcquireRequest) { r.IdempotencyKey = "k\x00" },
	} {
		req := acquire("bad", d)
		mutate(&req)
		f.refuse(t, "acquire with "+name, func() (any, error) { return f.s.Acquire(f.ctx, req) })
	}

	// Every limit itself is accepted.
	ok := acquire("limits", repeatDemand(capacity.Demand{CellID: "c", ResourceClass: "x", Amount: capacity.MaxAmount}, capacity.MaxDemands)...)
	ok.TTLMs, ok.Priority = capacity.MaxTTL.Milliseconds(), -capacity.MaxPriority
	ok.CostBudgetMicros, ok.TokenBudget = i64(capacity.MaxBudget), i64(0)
	ok.WorkItemID, ok.OwnerDigest, ok.TenantRef = max512, max512, "t"
	if res, err := f.s.Acquire(f.ctx, ok); err != nil || len(res.Leases) != capacity.MaxDemands {
		t.Fatalf("acquire at every limit: %+v %v", res, err)
	}
	named := acquire(max512, capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})
	named.LeaseID, named.WorkItemID = "my-lease-\u00e9\u4e16", "w" // not ASCII, still an identifier
	if res, err := f.s.Acquire(f.ctx, named); err != nil || res.Leases[0].LeaseID != named.LeaseID {
		t.Fatalf("acquire with a 512-byte key and a named lease: %+v %v", res, err)
	}
	checkStored(t, f.l.FSM)
}

// A tenant_ref of 512 bytes is a valid identifier: every operation takes
// it, keyed or not.
func TestLongestTenantRefIsAccepted(t *testing.T) {
	f := newBoundsFixture(t)
	tenant := max512
	if _, err := f.s.UpdateCell(f.ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: tenant, Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 5}}}); err != nil {
		t.Fatalf("update: %v", err)
	}
	req := acquire("k", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})
	req.TenantRef = tenant
	res, err := f.s.Acquire(f.ctx, req)
	if err != nil {
		t.Fatalf("acquire in a tenant of 512 bytes: %v", err)
	}
	refs := capacity.LeasesRequest{SchemaVersion: "1", TenantRef: tenant, OwnerDigest: "owner-a", IdempotencyKey: "r",
		Leases: []capacity.LeaseRef{{LeaseID: res.Leases[0].LeaseID, LeaseEpoch: 1, Fence: res.Leases[0].Fence}}}
	if _, err := f.s.Renew(f.ctx, refs); err != nil {
		t.Fatalf("keyed renew in a tenant of 512 bytes: %v", err)
	}
}

func TestRenewReleaseBounds(t *testing.T) {
	f := newBoundsFixture(t)
	seventeen := make([]capacity.LeaseRef, 17)
	for i := range seventeen {
		seventeen[i] = capacity.LeaseRef{LeaseID: fmt.Sprintf("l%d", i), LeaseEpoch: 1, Fence: 1}
	}
	cases := map[string]func(*capacity.LeasesRequest){
		"17 leases":          func(r *capacity.LeasesRequest) { r.Leases = seventeen },
		"no lease":           func(r *capacity.LeasesRequest) { r.Leases = nil },
		"a lease twice":      func(r *capacity.LeasesRequest) { r.Leases = append(r.Leases, r.Leases[0]) },
		"ttl -1":             func(r *capacity.LeasesRequest) { r.TTLMs = -1 },
		"ttl 24h+1ms":        func(r *capacity.LeasesRequest) { r.TTLMs = capacity.MaxTTL.Milliseconds() + 1 },
		"empty tenant_ref":   func(r *capacity.LeasesRequest) { r.TenantRef = "" },
		"empty owner_digest": func(r *capacity.LeasesRequest) { r.OwnerDigest = "" },
		"empty lease_id":     func(r *capacity.LeasesRequest) { r.Leases[0].LeaseID = "" },
	}
	for name, bad := range badIDs {
		cases["tenant_ref with "+name] = func(r *capacity.LeasesRequest) { r.TenantRef = bad }
		cases["owner_digest with "+name] = func(r *capacity.LeasesRequest) { r.OwnerDigest = bad }
		cases["lease_id with "+name] = func(r *capacity.LeasesRequest) { r.Leases[0].LeaseID = bad }
	}
	for _, name := range sortedKeys(cases) {
		for _, kind := range []struct {
			name string
			typ  log.Type
			call func(context.Context, capacity.LeasesRequest) (*capacity.LeasesResult, error)
		}{{"renew", capacity.CmdRenew, f.s.Renew}, {"release", capacity.CmdRelease, f.s.Release}} {
			req := f.leasesReq(f.ref())
			cases[name](&req)
			f.refuse(t, kind.name+" with "+name, func() (any, error) { return kind.call(f.ctx, req) })
			f.refuseRaw(t, kind.name+" with "+name, kind.typ, rawOfLeases(req))
		}
	}
	for name, mutate := range map[string]func(*capacity.LeasesRequest){
		"schema_version 2":               func(r *capacity.LeasesRequest) { r.SchemaVersion = "2" },
		"idempotency_key of 513 bytes":   func(r *capacity.LeasesRequest) { r.IdempotencyKey = long },
		"idempotency_key with a control": func(r *capacity.LeasesRequest) { r.IdempotencyKey = "k\x1b" },
	} {
		req := f.leasesReq(f.ref())
		mutate(&req)
		f.refuse(t, "renew with "+name, func() (any, error) { return f.s.Renew(f.ctx, req) })
		f.refuse(t, "release with "+name, func() (any, error) { return f.s.Release(f.ctx, req) })
	}
	// 16 leases and a 24 h renewal are accepted.
	var refs []capacity.LeaseRef
	res, err := f.s.Acquire(f.ctx, acquire("sixteen", repeatDemand(capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}, 16)...))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Leases {
		refs = append(refs, capacity.LeaseRef{LeaseID: l.LeaseID, LeaseEpoch: l.LeaseEpoch, Fence: l.Fence})
	}
	req := f.leasesReq(refs...)
	req.TTLMs = capacity.MaxTTL.Milliseconds()
	if got, err := f.s.Renew(f.ctx, req); err != nil || len(got.Leases) != 16 || got.Leases[15].ExpiresAtMs != got.NowMs+req.TTLMs {
		t.Fatalf("renew of 16 leases for 24 h: %+v %v", got, err)
	}
	for i := range refs {
		refs[i].LeaseEpoch++
	}
	if got, err := f.s.Release(f.ctx, f.leasesReq(refs...)); err != nil || len(got.Leases) != 16 {
		t.Fatalf("release of 16 leases: %+v %v", got, err)
	}
	checkStored(t, f.l.FSM)
}

func TestReclaimAndReadBounds(t *testing.T) {
	f := newBoundsFixture(t)
	type page struct {
		tenant, cell, lease, cursor string
		max                         int
	}
	cases := map[string]page{
		"max_count 0":          {tenant: "t", max: 0},
		"max_count -1":         {tenant: "t", max: -1},
		"max_count 129":        {tenant: "t", max: 129},
		"cursor of 2049 bytes": {tenant: "t", max: 1, cursor: strings.Repeat("c", 2049)},
		"empty tenant_ref":     {max: 1},
	}
	for name, bad := range badIDs {
		cases["tenant_ref with "+name] = page{tenant: bad, max: 1}
		cases["cell_id with "+name] = page{tenant: "t", cell: bad, max: 1}
		cases["lease_id with "+name] = page{tenant: "t", lease: bad, max: 1} // reads only
	}
	for _, name := range sortedKeys(cases) {
		p := cases[name]
		read := capacity.ReadRequest{SchemaVersion: "1", TenantRef: p.tenant, CellID: p.cell, LeaseID: p.lease, MaxCount: p.max, Cursor: p.cursor}
		f.refuse(t, "status with "+name, func() (any, error) { return f.s.Status(f.ctx, read, fsm.Linearizable) })
		f.refuse(t, "reconcile with "+name, func() (any, error) { return f.s.Reconcile(f.ctx, read, fsm.Stale) })
		for _, q := range []fsm.QueryType{capacity.QueryStatus, capacity.QueryReconcile} {
			if _, err := f.l.Query(f.ctx, fsm.Query{Type: q, Payload: log.MustMarshal(rawRead{TenantRef: p.tenant, CellID: p.cell, LeaseID: p.lease, MaxCount: p.max, Cursor: p.cursor})}); !errors.Is(err, errs.Invalid) {
				t.Errorf("query %d with %s (sent directly): %v, want invalid", q, name, err)
			}
		}
		if p.lease != "" {
			continue
		}
		rc := capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: p.tenant, CellID: p.cell, MaxCount: p.max, Cursor: p.cursor}
		f.refuse(t, "reclaim with "+name, func() (any, error) { return f.s.Reclaim(f.ctx, rc) })
		f.refuseRaw(t, "reclaim with "+name, capacity.CmdReclaim, rawReclaim{TenantRef: p.tenant, CellID: p.cell, MaxCount: p.max, Cursor: p.cursor})
	}
	schema2 := capacity.ReadRequest{SchemaVersion: "2", TenantRef: "t", MaxCount: 1}
	f.refuse(t, "status with schema_version 2", func() (any, error) { return f.s.Status(f.ctx, schema2, fsm.Linearizable) })
	f.refuse(t, "reconcile with schema_version 2", func() (any, error) { return f.s.Reconcile(f.ctx, schema2, fsm.Linearizable) })
	f.refuse(t, "reclaim with schema_version 2", func() (any, error) {
		return f.s.Reclaim(f.ctx, capacity.ReclaimRequest{SchemaVersion: "2", TenantRef: "t", MaxCount: 1})
	})
	// 128 is accepted.
	if _, err := f.s.Status(f.ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 128}, fsm.Linearizable); err != nil {
		t.Errorf("status of 128: %v", err)
	}
	if _, err := f.s.Reconcile(f.ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 128}, fsm.Linearizable); err != nil {
		t.Errorf("reconcile of 128: %v", err)
	}
	if _, err := f.s.Reclaim(f.ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 128}); err != nil {
		t.Errorf("reclaim of 128: %v", err)
	}
}

func TestUpdateCellBounds(t *testing.T) {
	f := newBoundsFixture(t)
	seventeen := map[string]uint64{}
	for i := 0; i < 17; i++ {
		seventeen[fmt.Sprintf("class-%02d", i)] = 1
	}
	cases := map[string]capacity.UpdateCellRequest{
		"17 resource classes":    {TenantRef: "t", Cell: capacity.CellSpec{CellID: "n", Capacities: seventeen}},
		"capacity above the max": {TenantRef: "t", Cell: capacity.CellSpec{CellID: "n", Capacities: map[string]uint64{"x": capacity.MaxCapacity + 1}}},
		"capacity of 2^64-1":     {TenantRef: "t", Cell: capacity.CellSpec{CellID: "n", Capacities: map[string]uint64{"x": 1<<64 - 1}}},
		"empty cell_id":          {TenantRef: "t", Cell: capacity.CellSpec{Capacities: map[string]uint64{"x": 1}}},
		"empty tenant_ref":       {Cell: capacity.CellSpec{CellID: "n", Capacities: map[string]uint64{"x": 1}}},
		"empty resource class":   {TenantRef: "t", Cell: capacity.CellSpec{CellID: "n", Capacities: map[string]uint64{"": 1}}},
	}
	for name, bad := range badIDs {
		cases["tenant_ref with "+name] = capacity.UpdateCellRequest{TenantRef: bad, Cell: capacity.CellSpec{CellID: "n"}}
		cases["cell_id with "+name] = capacity.UpdateCellRequest{TenantRef: "t", Cell: capacity.CellSpec{CellID: bad}}
		cases["resource class with "+name] = capacity.UpdateCellRequest{TenantRef: "t", Cell: capacity.CellSpec{CellID: "n", Capacities: map[string]uint64{bad: 1}}}
	}
	for _, name := range sortedKeys(cases) {
		req := cases[name]
		req.SchemaVersion = "1"
		f.refuse(t, "update with "+name, func() (any, error) { return f.s.UpdateCell(f.ctx, req) })
		f.refuseRaw(t, "update with "+name, capacity.CmdUpdateCell, rawUpdate{TenantRef: req.TenantRef, Cell: req.Cell, ExpectedEpoch: req.ExpectedEpoch})
	}
	f.refuse(t, "update with schema_version 2", func() (any, error) {
		return f.s.UpdateCell(f.ctx, capacity.UpdateCellRequest{SchemaVersion: "2", TenantRef: "t", Cell: capacity.CellSpec{CellID: "n"}})
	})
	sixteen := map[string]uint64{}
	for i := 0; i < 16; i++ {
		sixteen[fmt.Sprintf("class-%02d", i)] = capacity.MaxCapacity
	}
	if res, err := f.s.UpdateCell(f.ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", Cell: capacity.CellSpec{CellID: "n", Capacities: sixteen}}); err != nil || len(res.Cell.Classes) != 16 {
		t.Fatalf("a cell of 16 classes at the max capacity: %+v %v", res, err)
	}
}

// Cursors are opaque and bound to their query kind, tenant and cell
// filter: anything else is refused.
func TestCursorsAreBoundToTheirQuery(t *testing.T) {
	f := newBoundsFixture(t)
	for i := 0; i < 3; i++ {
		cell(t, f.s, fmt.Sprintf("c%d", i), map[string]uint64{"x": 10})
		if _, err := f.s.Acquire(f.ctx, acquire(fmt.Sprintf("a%d", i), capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}, capacity.Demand{CellID: fmt.Sprintf("c%d", i), ResourceClass: "x", Amount: 1})); err != nil {
			t.Fatal(err)
		}
	}
	// Tenant u has the same shape.
	u := capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "u", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 5}}}
	if _, err := f.s.UpdateCell(f.ctx, u); err != nil {
		t.Fatal(err)
	}
	u.Cell.CellID = "d"
	if _, err := f.s.UpdateCell(f.ctx, u); err != nil {
		t.Fatal(err)
	}
	read := func(tenant, cell string) capacity.ReadRequest {
		return capacity.ReadRequest{SchemaVersion: "1", TenantRef: tenant, CellID: cell, MaxCount: 1}
	}
	st, err := f.s.Status(f.ctx, read("t", ""), fsm.Linearizable)
	if err != nil || st.NextCursor == "" {
		t.Fatalf("status page: %+v %v", st, err)
	}
	rc, err := f.s.Reconcile(f.ctx, read("t", ""), fsm.Linearizable)
	if err != nil || rc.NextCursor == "" {
		t.Fatalf("reconcile page: %+v %v", rc, err)
	}
	rcCell, err := f.s.Reconcile(f.ctx, read("t", "c"), fsm.Linearizable)
	if err != nil || rcCell.NextCursor == "" {
		t.Fatalf("reconcile page of cell c: %+v %v", rcCell, err)
	}
	// A reclaim cursor needs many expired leases of another cell first.
	if _, err := f.s.Acquire(f.ctx, acquire("short", repeatDemand(capacity.Demand{CellID: "c1", ResourceClass: "x", Amount: 1}, 3)...)); err != nil {
		t.Fatal(err)
	}
	f.l.Advance(time.Hour)
	rcl, err := f.s.Reclaim(f.ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1})
	if err != nil || rcl.NextCursor == "" {
		t.Fatalf("reclaim page: %+v %v", rcl, err)
	}

	never := []string{"", "x", "status.", "status.AAAA", "status." + strings.Repeat("A", 40), "reconcile.!!", st.NextCursor + "A",
		strings.Replace(st.NextCursor, "status.", "reconcile.", 1), st.NextCursor[:len(st.NextCursor)-1]}
	type use struct {
		name string
		run  func(cursor string) (any, error)
	}
	statusOf := func(tenant string) func(string) (any, error) {
		return func(c string) (any, error) {
			r := read(tenant, "")
			r.Cursor = c
			return f.s.Status(f.ctx, r, fsm.Linearizable)
		}
	}
	reconcileOf := func(tenant, cell string) func(string) (any, error) {
		return func(c string) (any, error) {
			r := read(tenant, cell)
			r.Cursor = c
			return f.s.Reconcile(f.ctx, r, fsm.Linearizable)
		}
	}
	reclaimOf := func(tenant, cell string) func(string) (any, error) {
		return func(c string) (any, error) {
			return f.s.Reclaim(f.ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: tenant, CellID: cell, MaxCount: 1, Cursor: c})
		}
	}
	for _, u := range []use{{"status", statusOf("t")}, {"reconcile", reconcileOf("t", "")}, {"reclaim", reclaimOf("t", "")}} {
		for _, c := range never[1:] {
			f.refuseMaybeProposed(t, fmt.Sprintf("%s with a cursor never issued %q", u.name, c), true, func() (any, error) { return u.run(c) })
		}
	}
	for _, tc := range []struct {
		what   string
		cursor string
		run    func(string) (any, error)
	}{
		{"a status cursor on reconcile", st.NextCursor, reconcileOf("t", "")},
		{"a status cursor on reclaim", st.NextCursor, reclaimOf("t", "")},
		{"a reconcile cursor on status", rc.NextCursor, statusOf("t")},
		{"a reconcile cursor on reclaim", rc.NextCursor, reclaimOf("t", "")},
		{"a reclaim cursor on status", rcl.NextCursor, statusOf("t")},
		{"a reclaim cursor on reconcile", rcl.NextCursor, reconcileOf("t", "")},
		{"a status cursor of tenant t on tenant u", st.NextCursor, statusOf("u")},
		{"a reconcile cursor of tenant t on tenant u", rc.NextCursor, reconcileOf("u", "")},
		{"a reclaim cursor of tenant t on tenant u", rcl.NextCursor, reclaimOf("u", "")},
		{"a reconcile cursor of all cells on cell c", rc.NextCursor, reconcileOf("t", "c")},
		{"a reconcile cursor of cell c on all cells", rcCell.NextCursor, reconcileOf("t", "")},
		{"a reclaim cursor of all cells on cell c1", rcl.NextCursor, reclaimOf("t", "c1")},
	} {
		f.refuseMaybeProposed(t, tc.what, true, func() (any, error) { return tc.run(tc.cursor) })
	}
	// Each cursor still works where it was issued.
	if res, err := statusOf("t")(st.NextCursor); err != nil || len(res.(*capacity.ReadResult).Cells) != 1 {
		t.Errorf("status with its own cursor: %v %v", res, err)
	}
	if res, err := reconcileOf("t", "")(rc.NextCursor); err != nil || len(res.(*capacity.ReadResult).Leases) != 1 {
		t.Errorf("reconcile with its own cursor: %v %v", res, err)
	}
	if res, err := reclaimOf("t", "")(rcl.NextCursor); err != nil || len(res.(*capacity.ReclaimResult).ReclaimedLeaseIDs) != 1 {
		t.Errorf("reclaim with its own cursor: %v %v", res, err)
	}
}

// denied requires a result with decision d, the error of its code with
// the decision in its detail, and no change to the capacity tables.
func denied(t *testing.T, l *fsmtest.Local, what string, d capacity.Decision, sentinel error, call func() (any, capacity.Decision, error)) {
	t.Helper()
	before := readStored(t, l.FSM).capacityDigest()
	res, got, err := call()
	if isNil(res) || got != d || !errors.Is(err, sentinel) {
		t.Errorf("%s: %+v decision %q, %v; want decision %s and %v", what, res, got, err, d, sentinel)
	}
	var e *errs.Error
	if !errors.As(err, &e) || e.Detail["decision"] != string(d) {
		t.Errorf("%s: error %#v without detail.decision %s", what, err, d)
	}
	if readStored(t, l.FSM).capacityDigest() != before {
		t.Errorf("%s: a denial changed the capacity tables", what)
	}
}

func acquireCall(ctx context.Context, s *capacity.Service, req capacity.AcquireRequest) func() (any, capacity.Decision, error) {
	return func() (any, capacity.Decision, error) {
		res, err := s.Acquire(ctx, req)
		if res == nil {
			return nil, "", err
		}
		return res, res.Decision, err
	}
}

func leasesCall(ctx context.Context, call func(context.Context, capacity.LeasesRequest) (*capacity.LeasesResult, error), req capacity.LeasesRequest) func() (any, capacity.Decision, error) {
	return func() (any, capacity.Decision, error) {
		res, err := call(ctx, req)
		if res == nil {
			return nil, "", err
		}
		return res, res.Decision, err
	}
}

// TestEveryDenialDecision produces each denial through the Go service
// (backpressure has its own test; forbidden is an error, not a decision:
// TestPrincipalBinding).
func TestEveryDenialDecision(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 2})
	res, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 2}))
	if err != nil {
		t.Fatal(err)
	}
	lease := res.Leases[0]
	ref := capacity.LeaseRef{LeaseID: lease.LeaseID, LeaseEpoch: 1, Fence: lease.Fence}
	batch := func(owner string, refs ...capacity.LeaseRef) capacity.LeasesRequest {
		return capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: owner, Leases: refs}
	}
	one := func(key string, d capacity.Demand) capacity.AcquireRequest { return acquire(key, d) }

	denied(t, l, "acquire over capacity", capacity.Exhausted, errs.Exhausted,
		acquireCall(ctx, s, one("k2", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})))
	denied(t, l, "acquire of a class the cell lacks", capacity.Exhausted, errs.Exhausted,
		acquireCall(ctx, s, one("k3", capacity.Demand{CellID: "c", ResourceClass: "y", Amount: 1})))
	denied(t, l, "acquire at another epoch", capacity.StaleEpoch, errs.StaleEpoch,
		acquireCall(ctx, s, one("k4", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1, ExpectedEpoch: u64(7)})))
	denied(t, l, "acquire on a cell that does not exist", capacity.Invalid, errs.Invalid,
		acquireCall(ctx, s, one("k5", capacity.Demand{CellID: "nowhere", ResourceClass: "x", Amount: 1})))
	denied(t, l, "update at another epoch", capacity.StaleEpoch, errs.StaleEpoch, func() (any, capacity.Decision, error) {
		res, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", ExpectedEpoch: u64(7),
			Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 5}}})
		if res == nil {
			return nil, "", err
		}
		if res.Cell.Epoch != 1 {
			t.Errorf("a stale update reports epoch %d, want the stored 1", res.Cell.Epoch)
		}
		return res, res.Decision, err
	})
	denied(t, l, "update below usage", capacity.Invalid, errs.Invalid, func() (any, capacity.Decision, error) {
		res, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t",
			Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 1}}})
		if res == nil {
			return nil, "", err
		}
		return res, res.Decision, err
	})
	denied(t, l, "update that drops a used class", capacity.Invalid, errs.Invalid, func() (any, capacity.Decision, error) {
		res, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t",
			Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"y": 9}}})
		if res == nil {
			return nil, "", err
		}
		return res, res.Decision, err
	})
	for _, kind := range []struct {
		name string
		call func(context.Context, capacity.LeasesRequest) (*capacity.LeasesResult, error)
	}{{"renew", s.Renew}, {"release", s.Release}} {
		stale := ref
		stale.LeaseEpoch = 2
		denied(t, l, kind.name+" at another epoch", capacity.StaleEpoch, errs.StaleEpoch, leasesCall(ctx, kind.call, batch("owner-a", stale)))
		stale = ref
		stale.Fence = 99
		denied(t, l, kind.name+" with another fence", capacity.StaleFence, errs.StaleFence, leasesCall(ctx, kind.call, batch("owner-a", stale)))
		denied(t, l, kind.name+" by another owner", capacity.StaleFence, errs.StaleFence, leasesCall(ctx, kind.call, batch("owner-b", ref)))
		denied(t, l, kind.name+" of no lease", capacity.Invalid, errs.Invalid,
			leasesCall(ctx, kind.call, batch("owner-a", capacity.LeaseRef{LeaseID: "nope", LeaseEpoch: 1, Fence: 1})))
		denied(t, l, kind.name+" of a good lease with a bad one", capacity.Invalid, errs.Invalid,
			leasesCall(ctx, kind.call, batch("owner-a", ref, capacity.LeaseRef{LeaseID: "nope", LeaseEpoch: 1, Fence: 1})))
	}
	// A released lease is stale; an expired one is expired.
	if _, err := s.Release(ctx, batch("owner-a", ref)); err != nil {
		t.Fatal(err)
	}
	denied(t, l, "renew of a released lease", capacity.StaleFence, errs.StaleFence, leasesCall(ctx, s.Renew, batch("owner-a", ref)))
	denied(t, l, "release of a released lease", capacity.StaleFence, errs.StaleFence, leasesCall(ctx, s.Release, batch("owner-a", ref)))
	res, err = s.Acquire(ctx, acquire("k6", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	ref2 := capacity.LeaseRef{LeaseID: res.Leases[0].LeaseID, LeaseEpoch: 1, Fence: res.Leases[0].Fence}
	l.Advance(10 * time.Second) // the TTL: now == expires_at
	denied(t, l, "renew at the deadline", capacity.Expired, errs.Expired, leasesCall(ctx, s.Renew, batch("owner-a", ref2)))
	denied(t, l, "release at the deadline", capacity.Expired, errs.Expired, leasesCall(ctx, s.Release, batch("owner-a", ref2)))
	if _, err := s.Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1}); err != nil {
		t.Fatal(err)
	}
	denied(t, l, "renew of a reclaimed lease", capacity.Expired, errs.Expired, leasesCall(ctx, s.Renew, batch("owner-a", ref2)))
	checkStored(t, l.FSM)
}

// raceEnabled reports whether the test binary runs the race detector.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// setActiveCount rewrites the tenant's active lease counter in a snapshot
// of l's FSM and restores it: a shortcut to a tenant at the limit.
func setActiveCount(t *testing.T, l *fsmtest.Local, tenant string, active uint64) {
	t.Helper()
	var buf bytes.Buffer
	if err := l.FSM.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	in := buf.Bytes()
	in = in[:len(in)-sha256.Size]
	out := append([]byte(nil), in[:8]...)
	table, patched := "", false
	for b := in[8:]; len(b) > 0; {
		kind, n := b[0], binary.BigEndian.Uint32(b[1:5])
		body := b[5 : 5+n]
		b = b[5+n:]
		if kind == 'T' {
			if err := log.Unmarshal(body, &table); err != nil {
				t.Fatal(err)
			}
		}
		if kind == 'R' && table == "capacity_tenants" {
			var row storedTenant
			if err := log.Unmarshal(body, &row); err != nil {
				t.Fatal(err)
			}
			if row.TenantRef == tenant {
				row.Active, patched = active, true
				body = log.MustMarshal(row)
			}
		}
		var hdr [5]byte
		hdr[0] = kind
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(body)))
		out = append(append(out, hdr[:]...), body...)
	}
	if !patched {
		t.Fatalf("no counter row for tenant %q", tenant)
	}
	sum := sha256.Sum256(out)
	if err := l.FSM.Restore(io.NopCloser(bytes.NewReader(append(out, sum[:]...)))); err != nil {
		t.Fatalf("restore: %v", err)
	}
}

// TestBackpressureAtMaxActivePerTenant fills a tenant with
// MaxActivePerTenant-1 active leases and checks that an acquire that would
// pass the limit is denied with backpressure and charges nothing. Without
// the race detector the leases are real (100,000 of them, a few seconds);
// under it that takes about 40 s, so the tenant's counter is set through a
// rewritten snapshot instead and the test checks the decision only.
func TestBackpressureAtMaxActivePerTenant(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 2 * capacity.MaxActivePerTenant})
	real := !raceEnabled()
	var last capacity.Lease
	if real {
		for held, i := 0, 0; held < capacity.MaxActivePerTenant-1; i++ {
			n := min(capacity.MaxDemands, capacity.MaxActivePerTenant-1-held)
			res, err := s.Acquire(ctx, acquire(fmt.Sprintf("fill-%d", i), repeatDemand(capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}, n)...))
			if err != nil {
				t.Fatalf("filling, at %d leases: %v", held, err)
			}
			held += n
			last = res.Leases[len(res.Leases)-1]
		}
	} else {
		t.Logf("race detector on: %d real leases would take about 40 s; setting the tenant's counter instead", capacity.MaxActivePerTenant)
		res, err := s.Acquire(ctx, acquire("fill", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}))
		if err != nil {
			t.Fatal(err)
		}
		last = res.Leases[0]
		setActiveCount(t, l, "t", capacity.MaxActivePerTenant-1)
	}
	d := capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}
	// A snapshot of 100,000 leases is slow to take, so "charges nothing"
	// is checked on the cell: its usage and fence counter stay put.
	cellNow := func() (uint64, uint64) {
		st, err := s.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", CellID: "c", MaxCount: 1}, fsm.Linearizable)
		if err != nil {
			t.Fatal(err)
		}
		return st.Cells[0].Classes[0].Used, st.Cells[0].LastFence
	}
	backpressure := func(what string, demands ...capacity.Demand) {
		t.Helper()
		used, fence := cellNow()
		res, err := s.Acquire(ctx, acquire(what, demands...))
		if res == nil || res.Decision != capacity.Backpressure || !errors.Is(err, errs.Backpressure) || len(res.Leases) != 0 {
			t.Fatalf("%s: %+v %v, want backpressure", what, res, err)
		}
		if u, f := cellNow(); u != used || f != fence {
			t.Fatalf("%s: a denial moved the cell from used %d fence %d to used %d fence %d", what, used, fence, u, f)
		}
	}
	backpressure("2 leases at limit-1", d, d)
	if res, err := s.Acquire(ctx, acquire("to-limit", d)); err != nil || len(res.Leases) != 1 {
		t.Fatalf("acquire of the last lease under the limit: %+v %v", res, err)
	}
	backpressure("1 lease at the limit", d)
	if _, err := s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a",
		Leases: []capacity.LeaseRef{{LeaseID: last.LeaseID, LeaseEpoch: 1, Fence: last.Fence}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Acquire(ctx, acquire("after-release", d)); err != nil || len(res.Leases) != 1 {
		t.Fatalf("acquire after a release at the limit: %+v %v", res, err)
	}
	// Another tenant is not held back.
	if _, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "u", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 1}}}); err != nil {
		t.Fatal(err)
	}
	other := acquire("other", d)
	other.TenantRef = "u"
	if _, err := s.Acquire(ctx, other); err != nil {
		t.Fatalf("acquire in another tenant: %v", err)
	}
	if real {
		checkStored(t, l.FSM)
	}
}
