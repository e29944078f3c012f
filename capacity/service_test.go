package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/google/go-cmp/cmp"
)

func newService(t *testing.T) (*fsmtest.Local, *capacity.Service) {
	t.Helper()
	l, err := fsmtest.New(capacity.Module())
	if err != nil {
		t.Fatal(err)
	}
	return l, capacity.NewService(l, l)
}

func cell(t *testing.T, s *capacity.Service, id string, caps map[string]uint64) {
	t.Helper()
	if _, err := s.UpdateCell(context.Background(), capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", Cell: capacity.CellSpec{CellID: id, Capacities: caps}}); err != nil {
		t.Fatal(err)
	}
}

func acquire(key string, demands ...capacity.Demand) capacity.AcquireRequest {
	return capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "t", WorkItemID: "w-" + key, OwnerDigest: "owner-a",
		IdempotencyKey: key, Demands: demands, TTLMs: 10_000}
}

func TestAcquireAllOrNothingAndRelease(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "gpu-1", map[string]uint64{"gpu": 2, "mem": 100})
	cell(t, s, "gpu-2", map[string]uint64{"gpu": 1})
	res, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 2}, capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil || res.Decision != capacity.Granted || len(res.Leases) != 2 || res.Leases[0].Fence != 1 {
		t.Fatalf("acquire: %+v %v", res, err)
	}
	// gpu-1 is full: a two-cell acquire is denied and charges nothing.
	denied, err := s.Acquire(ctx, acquire("k2", capacity.Demand{CellID: "gpu-1", ResourceClass: "mem", Amount: 50}, capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if !errors.Is(err, errs.Exhausted) || denied.Decision != capacity.Exhausted {
		t.Fatalf("over capacity: %+v %v", denied, err)
	}
	st, err := s.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", CellID: "gpu-1", MaxCount: 10}, 0)
	if err != nil || len(st.Cells) != 1 || st.Cells[0].Classes[1].Used != 0 {
		t.Fatalf("mem was charged by a denied acquire: %+v %v", st, err)
	}
	// Replay.
	again, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 2}, capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil || !again.Replayed || again.Leases[0].LeaseID != res.Leases[0].LeaseID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if _, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 1})); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("key reuse: %v", err)
	}
	// Release with a wrong fence changes nothing; the right one frees both.
	refs := []capacity.LeaseRef{{LeaseID: res.Leases[0].LeaseID, LeaseEpoch: 1, Fence: 1}, {LeaseID: res.Leases[1].LeaseID, LeaseEpoch: 1, Fence: 99}}
	if _, err := s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", Leases: refs}); !errors.Is(err, errs.StaleFence) {
		t.Fatalf("stale fence release: %v", err)
	}
	refs[1].Fence = res.Leases[1].Fence
	rel, err := s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", Leases: refs})
	if err != nil || len(rel.Leases) != 2 || rel.Leases[0].State != capacity.LeaseReleased {
		t.Fatalf("release: %+v %v", rel, err)
	}
	// Expiry by FSM time: a new lease expires, renew then fails expired.
	got, err := s.Acquire(ctx, acquire("k3", capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	l.Advance(10 * time.Second)
	_, err = s.Renew(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a",
		Leases: []capacity.LeaseRef{{LeaseID: got.Leases[0].LeaseID, LeaseEpoch: 1, Fence: got.Leases[0].Fence}}})
	if !errors.Is(err, errs.Expired) {
		t.Fatalf("renew of an expired lease: %v", err)
	}
	rc, err := s.Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 10})
	if err != nil || len(rc.ReclaimedLeaseIDs) != 1 {
		t.Fatalf("reclaim: %+v %v", rc, err)
	}
	next, err := s.Acquire(ctx, acquire("k4", capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil || next.Leases[0].Fence <= got.Leases[0].Fence {
		t.Fatalf("fence after reclaim: %+v %v", next, err)
	}
}

// The helpers below read the capacity tables straight out of the FSM's
// snapshot stream (the documented format of fsm/snapshot.go), so that
// tests can check the stored state itself, not only what the reads show.

// storedCell mirrors the cells table's rows.
type storedCell struct {
	TenantRef   string            `msgpack:"tenant_ref"`
	GraphRef    string            `msgpack:"graph_ref,omitempty"`
	CellID      string            `msgpack:"cell_id"`
	Epoch       uint64            `msgpack:"epoch"`
	Capacity    map[string]uint64 `msgpack:"capacity"`
	Used        map[string]uint64 `msgpack:"used"`
	LastFence   uint64            `msgpack:"last_fence"`
	UpdatedAtMs int64             `msgpack:"updated_at_ms"`
}

// storedTime mirrors the expiry and ended index rows.
type storedTime struct {
	AtMs      int64  `msgpack:"at_ms"`
	TenantRef string `msgpack:"tenant_ref"`
	GraphRef  string `msgpack:"graph_ref,omitempty"`
	LeaseID   string `msgpack:"lease_id"`
}

// storedTenant mirrors the tenant counter rows.
type storedTenant struct {
	TenantRef string `msgpack:"tenant_ref"`
	Active    uint64 `msgpack:"active"`
}

// storedState is every capacity table of an FSM, plus the raw rows of
// every table (capacity or not) for digests.
type storedState struct {
	fsmtest.Stored
	Cells   []storedCell
	Leases  []capacity.Lease
	Expiry  []storedTime
	Ended   []storedTime
	Tenants []storedTenant
}

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler = fsmtest.Fataler

// readStored parses f's snapshot stream.
func readStored(t fataler, f *fsm.FSM) storedState {
	t.Helper()
	s := fsmtest.ReadStored(t, f)
	return storedState{Stored: s,
		Cells:   fsmtest.Rows[storedCell](t, s, "capacity_cells"),
		Leases:  fsmtest.Rows[capacity.Lease](t, s, "capacity_leases"),
		Expiry:  fsmtest.Rows[storedTime](t, s, "capacity_expiry"),
		Ended:   fsmtest.Rows[storedTime](t, s, "capacity_ended"),
		Tenants: fsmtest.Rows[storedTenant](t, s, "capacity_tenants"),
	}
}

// capacityDigest covers the capacity tables only.
func (s storedState) capacityDigest() [32]byte {
	return s.Digest(func(table string) bool { return strings.HasPrefix(table, "capacity_") })
}

// invariants lists every way s breaks the rules of the capacity tables:
// usage per cell class equals the sum of its active leases and stays
// within capacity; fences are unique per cell and not above the cell's
// counter; every active lease has exactly one expiry row at its deadline
// and every ended one exactly one ended row at its end; no index row names
// a missing lease; each tenant's active counter counts its active leases
// (in all its graphs). Cells and leases are keyed by graph, tenant and id.
func (s storedState) invariants() []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	type cc struct{ graph, tenant, cell, class string }
	cells := map[[3]string]storedCell{}
	for _, c := range s.Cells {
		cells[[3]string{c.GraphRef, c.TenantRef, c.CellID}] = c
	}
	sums := map[cc]uint64{}
	fences := map[[3]string]map[uint64]string{}
	active := map[string]uint64{}
	leases := map[[3]string]capacity.Lease{}
	for _, l := range s.Leases {
		leases[[3]string{l.GraphRef, l.TenantRef, l.LeaseID}] = l
		key := [3]string{l.GraphRef, l.TenantRef, l.CellID}
		c, ok := cells[key]
		if !ok {
			badf("lease %s/%s names missing cell %s", l.TenantRef, l.LeaseID, l.CellID)
		} else if l.Fence == 0 || l.Fence > c.LastFence {
			badf("lease %s/%s holds fence %d; cell %s is at %d", l.TenantRef, l.LeaseID, l.Fence, l.CellID, c.LastFence)
		}
		if fences[key] == nil {
			fences[key] = map[uint64]string{}
		}
		if other, dup := fences[key][l.Fence]; dup {
			badf("leases %s and %s of cell %s/%s share fence %d", other, l.LeaseID, l.TenantRef, l.CellID, l.Fence)
		}
		fences[key][l.Fence] = l.LeaseID
		switch l.State {
		case capacity.LeaseActive:
			sums[cc{l.GraphRef, l.TenantRef, l.CellID, l.ResourceClass}] += l.Amount
			active[l.TenantRef]++
		case capacity.LeaseReleased, capacity.LeaseExpired:
		default:
			badf("lease %s/%s in state %q", l.TenantRef, l.LeaseID, l.State)
		}
	}
	for _, c := range s.Cells {
		for class, used := range c.Used {
			if want := sums[cc{c.GraphRef, c.TenantRef, c.CellID, class}]; used != want {
				badf("cell %s/%s uses %d of %s; its active leases sum to %d", c.TenantRef, c.CellID, used, class, want)
			}
			if used > c.Capacity[class] {
				badf("cell %s/%s uses %d of %s above its capacity %d", c.TenantRef, c.CellID, used, class, c.Capacity[class])
			}
		}
	}
	for k, sum := range sums {
		if c := cells[[3]string{k.graph, k.tenant, k.cell}]; c.Used[k.class] != sum {
			badf("active leases of %s/%s %s sum to %d; the cell records %d", k.tenant, k.cell, k.class, sum, c.Used[k.class])
		}
	}
	index := func(name string, rows []storedTime, want func(capacity.Lease) (bool, int64)) {
		seen := map[[3]string]int{}
		for _, r := range rows {
			key := [3]string{r.GraphRef, r.TenantRef, r.LeaseID}
			seen[key]++
			l, ok := leases[key]
			if !ok {
				badf("%s row at %d names missing lease %s/%s", name, r.AtMs, r.TenantRef, r.LeaseID)
				continue
			}
			if in, at := want(l); !in || at != r.AtMs {
				badf("%s row at %d for lease %s/%s (%s, expires %d, ended %d)", name, r.AtMs, r.TenantRef, r.LeaseID, l.State, l.ExpiresAtMs, l.EndedAtMs)
			}
		}
		for key, l := range leases {
			if in, _ := want(l); in && seen[key] != 1 {
				badf("lease %q/%s/%s (%s) has %d %s rows, want 1", key[0], key[1], key[2], l.State, seen[key], name)
			}
		}
	}
	index("expiry", s.Expiry, func(l capacity.Lease) (bool, int64) { return l.State == capacity.LeaseActive, l.ExpiresAtMs })
	index("ended", s.Ended, func(l capacity.Lease) (bool, int64) { return l.State != capacity.LeaseActive, l.EndedAtMs })
	counted := map[string]uint64{}
	for _, r := range s.Tenants {
		counted[r.TenantRef] = r.Active
	}
	for tenant, n := range active {
		if counted[tenant] != n {
			badf("tenant %s counts %d active leases; it holds %d", tenant, counted[tenant], n)
		}
	}
	for tenant, n := range counted {
		if _, listed := active[tenant]; !listed && n != 0 {
			badf("tenant %s counts %d active leases; it holds none", tenant, n)
		}
	}
	sort.Strings(bad)
	return bad
}

// checkStored fails t if f's capacity tables break an invariant.
func checkStored(t fataler, f *fsm.FSM) storedState {
	t.Helper()
	st := readStored(t, f)
	if bad := st.invariants(); len(bad) > 0 {
		t.Fatalf("capacity tables break %d invariants:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return st
}

// Service calls return a decision's error with its result; these check
// that pairing.
func wantDecisionErr(d capacity.Decision, err error) error {
	if d == capacity.Granted {
		if err != nil {
			return fmt.Errorf("granted with error %v", err)
		}
		return nil
	}
	codes := map[capacity.Decision]errs.Code{
		capacity.Exhausted: errs.CodeExhausted, capacity.StaleEpoch: errs.CodeStaleEpoch, capacity.StaleFence: errs.CodeStaleFence,
		capacity.Expired: errs.CodeExpired, capacity.Invalid: errs.CodeInvalid, capacity.Backpressure: errs.CodeBackpressure,
	}
	want, ok := codes[d]
	if !ok {
		return fmt.Errorf("unknown decision %q", d)
	}
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != want || e.Detail["decision"] != string(d) {
		return fmt.Errorf("decision %s with error %#v, want code %s and detail.decision %s", d, err, want, d)
	}
	return nil
}

// readAll pages through Status and Reconcile of a graph of a tenant with
// pages of size and returns the cells and leases, checking page sizes and
// cursors.
func readAll(ctx context.Context, svc *capacity.Service, graph, tenant, cell string, size int) ([]capacity.CellStatus, []capacity.Lease, []capacity.CellStatus, error) {
	var cells []capacity.CellStatus
	cursor := ""
	for page := 0; ; page++ {
		res, err := svc.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: tenant, GraphRef: graph, MaxCount: size, Cursor: cursor}, fsm.Linearizable)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("status page %d: %w", page, err)
		}
		if len(res.Cells) > size || len(res.Leases) != 0 || res.NextCursor != "" && len(res.Cells) != size {
			return nil, nil, nil, fmt.Errorf("status page %d of size %d: %d cells, %d leases, cursor %q", page, size, len(res.Cells), len(res.Leases), res.NextCursor)
		}
		cells = append(cells, res.Cells...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
		if page > 1000 {
			return nil, nil, nil, errors.New("status pages do not end")
		}
	}
	var leases []capacity.Lease
	var pageCells []capacity.CellStatus
	cursor = ""
	for page := 0; ; page++ {
		res, err := svc.Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: tenant, GraphRef: graph, CellID: cell, MaxCount: size, Cursor: cursor}, fsm.Linearizable)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reconcile page %d: %w", page, err)
		}
		if len(res.Leases) > size || res.NextCursor != "" && len(res.Leases) != size {
			return nil, nil, nil, fmt.Errorf("reconcile page %d of size %d: %d leases, cursor %q", page, size, len(res.Leases), res.NextCursor)
		}
		seen := map[string]bool{}
		var want []string
		for _, l := range res.Leases {
			if !seen[l.CellID] {
				seen[l.CellID] = true
				want = append(want, l.CellID)
			}
		}
		var got []string
		for _, c := range res.Cells {
			got = append(got, c.CellID)
		}
		if !cmp.Equal(got, want) {
			return nil, nil, nil, fmt.Errorf("reconcile page %d lists cells %v for leases on %v", page, got, want)
		}
		leases = append(leases, res.Leases...)
		pageCells = append(pageCells, res.Cells...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
		if page > 1000 {
			return nil, nil, nil, errors.New("reconcile pages do not end")
		}
	}
	return cells, leases, pageCells, nil
}

// A caller may name a single-demand lease; the FSM names the others. No
// name may ever make a grant overwrite a lease that is still stored: that
// would leak usage, and leave an expiry row behind that every later Tick
// and acquire of the tenant trips over.
func TestNamedLeaseNeverMeetsAGeneratedOne(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 10})
	// The FSM names leases "lease-<index>-<demand>"; a caller may not pick
	// a name of that form (it could be the very next acquire's), and the
	// refusal changes nothing.
	next := len(l.Log()) + 1
	named := acquire("named", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})
	named.LeaseID, named.TTLMs = fmt.Sprintf("lease-%d-0", next+1), 5000
	before := len(l.Log())
	if _, err := s.Acquire(ctx, named); !errors.Is(err, errs.Invalid) {
		t.Fatalf("caller-chosen lease id of the generated form: %v, want invalid", err)
	}
	if len(l.Log()) != before {
		t.Fatal("the refused acquire was proposed")
	}
	named.LeaseID = "my-lease"
	first, err := s.Acquire(ctx, named)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Acquire(ctx, acquire("generated", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if first.Leases[0].LeaseID == second.Leases[0].LeaseID || !strings.HasPrefix(second.Leases[0].LeaseID, "lease-") {
		t.Errorf("leases named %q and %q", first.Leases[0].LeaseID, second.Leases[0].LeaseID)
	}
	rc, err := s.Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 10}, fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Leases) != 2 || rc.Cells[0].Classes[0].Used != 3 {
		t.Errorf("after two grants of 1 and 2: %d leases stored, cell uses %d", len(rc.Leases), rc.Cells[0].Classes[0].Used)
	}
	if bad := readStored(t, l.FSM).invariants(); len(bad) > 0 {
		t.Errorf("capacity tables break %d invariants:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	// A name already taken is a conflict.
	taken := acquire("taken", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})
	taken.LeaseID = "my-lease"
	if _, err := s.Acquire(ctx, taken); !errors.Is(err, errs.Conflict) {
		t.Errorf("acquire naming a stored lease: %v, want conflict", err)
	}
	// Let the named lease's deadline pass: ticks and acquires go on.
	l.Advance(6 * time.Second)
	res, err := l.Propose(ctx, log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 16})})
	if err != nil || res.Err != nil {
		t.Errorf("tick after the deadline: %v %v", err, res.Err)
	}
	if _, err := s.Acquire(ctx, acquire("later", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})); err != nil {
		t.Errorf("acquire after the deadline: %v", err)
	}
}

// TestPrincipalBinding: with a principal on the context (as an external
// caller has), the FSM binds owner digests, tenants and roles to it.
func TestPrincipalBinding(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 10})
	if _, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "u", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 10}}}); err != nil {
		t.Fatal(err)
	}
	as := func(id string, tenants []string, roles ...string) context.Context {
		return fsm.WithPrincipal(ctx, identity.Principal{ID: id, Tenants: tenants, Roles: roles})
	}
	p1 := as("p1", []string{"t"}, identity.RoleMember)
	p2 := as("p2", []string{"t"}, identity.RoleMember)
	reader := as("r", []string{"t"}, identity.RoleReader)
	outsider := as("o", []string{"u"}, identity.RoleAdmin)
	noRole := as("n", []string{"t"})
	noTenant := as("m", nil, identity.RoleMember)
	star := as("s", []string{"*"}, identity.RoleMember)
	controller := as("ctl", []string{"t"}, identity.RoleController)

	d := capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}
	acq := func(key, owner, tenant string) capacity.AcquireRequest {
		r := acquire(key, d)
		r.OwnerDigest, r.TenantRef = owner, tenant
		return r
	}
	forbidden := func(what string, call func() (any, error)) {
		t.Helper()
		before := readStored(t, l.FSM).capacityDigest()
		res, err := call()
		if !errors.Is(err, errs.Forbidden) || !isNil(res) {
			t.Errorf("%s: %+v %v, want forbidden", what, res, err)
		}
		if readStored(t, l.FSM).capacityDigest() != before {
			t.Errorf("%s: the state changed", what)
		}
	}
	notFound := func(what string, call func() (any, error)) {
		t.Helper()
		if res, err := call(); !errors.Is(err, errs.NotFound) || !isNil(res) {
			t.Errorf("%s: %+v %v, want not_found", what, res, err)
		}
	}
	acquireAs := func(c context.Context, r capacity.AcquireRequest) func() (any, error) {
		return func() (any, error) { return s.Acquire(c, r) }
	}

	forbidden("acquire for an owner that is not the principal's", acquireAs(p1, acq("a1", "owner-a", "t")))
	forbidden("acquire as another principal's owner", acquireAs(p1, acq("a2", capacity.OwnerDigest("p2"), "t")))
	forbidden("acquire in another tenant", acquireAs(p1, acq("a3", capacity.OwnerDigest("p1"), "u")))
	forbidden("acquire by a reader", acquireAs(reader, acq("a4", capacity.OwnerDigest("r"), "t")))
	forbidden("acquire without a role", acquireAs(noRole, acq("a5", capacity.OwnerDigest("n"), "t")))
	forbidden("acquire without a tenant", acquireAs(noTenant, acq("a6", capacity.OwnerDigest("m"), "t")))
	mine, err := s.Acquire(p1, acq("a7", capacity.OwnerDigest("p1"), "t"))
	if err != nil {
		t.Fatalf("acquire as p1 for p1's owner: %v", err)
	}
	if _, err := s.Acquire(star, acq("a8", capacity.OwnerDigest("s"), "t")); err != nil {
		t.Fatalf("acquire by a principal of every tenant: %v", err)
	}

	ref := capacity.LeaseRef{LeaseID: mine.Leases[0].LeaseID, LeaseEpoch: 1, Fence: mine.Leases[0].Fence}
	batch := func(owner, tenant string) capacity.LeasesRequest {
		return capacity.LeasesRequest{SchemaVersion: "1", TenantRef: tenant, OwnerDigest: owner, Leases: []capacity.LeaseRef{ref}}
	}
	for _, kind := range []struct {
		name string
		call func(context.Context, capacity.LeasesRequest) (*capacity.LeasesResult, error)
	}{{"renew", s.Renew}, {"release", s.Release}} {
		forbidden(kind.name+" for an owner that is not the principal's", func() (any, error) { return kind.call(p1, batch("owner-a", "t")) })
		forbidden(kind.name+" as the lease owner by another principal", func() (any, error) { return kind.call(p2, batch(capacity.OwnerDigest("p1"), "t")) })
		forbidden(kind.name+" in another tenant", func() (any, error) { return kind.call(p1, batch(capacity.OwnerDigest("p1"), "u")) })
		forbidden(kind.name+" by a reader", func() (any, error) { return kind.call(reader, batch(capacity.OwnerDigest("r"), "t")) })
		// Another member presenting its own digest is not the owner.
		res, err := kind.call(p2, batch(capacity.OwnerDigest("p2"), "t"))
		if res == nil || res.Decision != capacity.StaleFence || !errors.Is(err, errs.StaleFence) {
			t.Errorf("%s of p1's lease by p2: %+v %v, want stale_fence", kind.name, res, err)
		}
	}
	if res, err := s.Renew(p1, batch(capacity.OwnerDigest("p1"), "t")); err != nil || res.Leases[0].LeaseEpoch != 2 {
		t.Fatalf("renew by the owner: %+v %v", res, err)
	}

	reclaim := func(c context.Context, tenant string) func() (any, error) {
		return func() (any, error) {
			return s.Reclaim(c, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: tenant, MaxCount: 1})
		}
	}
	forbidden("reclaim by a reader", reclaim(reader, "t"))
	forbidden("reclaim in another tenant", reclaim(p1, "u"))
	if _, err := reclaim(p1, "t")(); err != nil {
		t.Errorf("reclaim by a member: %v", err)
	}

	update := func(c context.Context, tenant string) func() (any, error) {
		return func() (any, error) {
			return s.UpdateCell(c, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: tenant, Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 20}}})
		}
	}
	forbidden("update by a member", update(p1, "t"))
	forbidden("update by a reader", update(reader, "t"))
	forbidden("update by a controller of another tenant", update(controller, "u"))
	if _, err := update(controller, "t")(); err != nil {
		t.Errorf("update by the tenant's controller: %v", err)
	}

	read := func(c context.Context, status bool, tenant string) func() (any, error) {
		return func() (any, error) {
			req := capacity.ReadRequest{SchemaVersion: "1", TenantRef: tenant, MaxCount: 10}
			if status {
				return s.Status(c, req, fsm.Linearizable)
			}
			return s.Reconcile(c, req, fsm.Stale)
		}
	}
	for _, status := range []bool{true, false} {
		notFound(fmt.Sprintf("read (status %t) by another tenant", status), read(outsider, status, "t"))
		notFound(fmt.Sprintf("read (status %t) without a role", status), read(noRole, status, "t"))
		notFound(fmt.Sprintf("read (status %t) without a tenant", status), read(noTenant, status, "t"))
		for _, c := range []context.Context{reader, p1, star} {
			if _, err := read(c, status, "t")(); err != nil {
				t.Errorf("read (status %t) in the principal's tenant: %v", status, err)
			}
		}
	}
	checkStored(t, l.FSM)
}

// A result is output: the same command must explain a denial the same way
// on every replica and every time (DESIGN: no map order reaches output).
func TestDenialMessagesAreDeterministic(t *testing.T) {
	ctx := context.Background()
	_, s := newService(t)
	caps := map[string]uint64{}
	var demands []capacity.Demand
	for _, class := range []string{"a", "b", "c", "d", "e", "f"} {
		caps[class] = 5
		demands = append(demands, capacity.Demand{CellID: "c", ResourceClass: class, Amount: 1})
	}
	cell(t, s, "c", caps)
	if _, err := s.Acquire(ctx, acquire("k", demands...)); err != nil {
		t.Fatal(err)
	}
	messages := map[string]int{}
	for i := 0; i < 40; i++ {
		res, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{}}})
		if res == nil || res.Decision != capacity.Invalid {
			t.Fatalf("lowering every used class to 0: %+v %v", res, err)
		}
		messages[res.Message]++
	}
	if len(messages) != 1 {
		t.Errorf("one denial, %d different messages: %v", len(messages), messages)
	}
}

// The idempotency ledger stores a keyed command's result, message and
// all: a denial explained differently on two replicas makes their states
// differ. Any client may key a command (the raw command route takes any
// envelope), so every replica replaying the same log must reach the same
// state hash.
func TestKeyedDenialIsTheSameOnEveryReplica(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	caps := map[string]uint64{}
	var demands []capacity.Demand
	for _, class := range []string{"a", "b", "c", "d", "e", "f"} {
		caps[class] = 5
		demands = append(demands, capacity.Demand{CellID: "c", ResourceClass: class, Amount: 1})
	}
	cell(t, s, "c", caps)
	if _, err := s.Acquire(ctx, acquire("k", demands...)); err != nil {
		t.Fatal(err)
	}
	res, err := l.Propose(ctx, log.Command{Type: capacity.CmdUpdateCell, Version: 1, IdemScope: "capacity/cells/t", IdemKey: "lower",
		Payload: log.MustMarshal(rawUpdate{TenantRef: "t", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{}}})})
	if err != nil || res.Err != nil {
		t.Fatalf("keyed update: %v %v", err, res.Err)
	}
	entries := l.Log()
	_, want, err := l.FSM.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		replica, err := fsm.New(fsm.Config{Modules: []fsm.Module{capacity.Module()}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			replica.Apply(e)
		}
		if _, got, err := replica.StateHash(); err != nil || got != want {
			t.Fatalf("replica %d replayed the same %d entries to state %x, the original is at %x (%v)", i, len(entries), got, want, err)
		}
	}
}
