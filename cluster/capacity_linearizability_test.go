package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/linearizability"
)

// The cells of the capacity linearizability run: one resource class each,
// a small capacity so that grants and exhaustion alternate.
var capLinCells = map[string]uint64{"lin-a": 6, "lin-b": 6, "lin-c": 5}

const (
	capLinTenant = "tenant-lin"
	capLinClass  = "slot"
)

// Concurrent clients, each with a capacity.Service over its node, acquire,
// renew, release and read leases on a few cells while the leader is
// stopped and later restarted; porcupine then checks the history against
// the sequential model of single-cell leases (partitioned by cell).
// Clients i and i+4 share an owner, so one may renew or release a lease
// the other holds: the loser sees stale_epoch or stale_fence. Clients also
// present stale tokens on purpose, and adopt leases nobody holds (those of
// acquires whose outcome was unknown) from Reconcile, so unknown grants do
// not leak capacity. The TTL is an hour: expiry is not part of this run.
// At the end every node, read locally, must hold a usage per cell that
// never exceeds its capacity and equals the sum of its active leases.
func TestCapacityLinearizableAcrossLeaderStop(t *testing.T) {
	const (
		clients   = 8
		opTimeout = 2 * time.Second
		// Progress-driven phases, as in TestNodesLinearizableAcrossLeaderStop.
		minOK              = 450
		minOKAfterStop     = 150
		minGrants          = 60 // acquires granted and leases released
		minGrantsAfterStop = 20
		// Each phase is bounded, so a run that stalls ends (and fails its
		// minimums) in about 20 s; a healthy one takes a few seconds.
		phaseLimit = 6 * time.Second
	)
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx := context.Background()
	leader := c.Node(c.WaitLeader(5 * time.Second))
	setup := capacity.NewService(leader, leader)
	for cell, limit := range capLinCells {
		if _, err := setup.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: capLinTenant,
			Cell: capacity.CellSpec{CellID: cell, Capacities: map[string]uint64{capLinClass: limit}}}); err != nil {
			t.Fatal(err)
		}
	}
	r := &capRun{t: t, c: c, h: linearizability.NewHistory(), seed: uint64(time.Now().UnixNano()), opTimeout: opTimeout,
		held: map[string]bool{}, outcomes: map[string]int{}, unknown: map[string]int{}}
	t.Logf("seed %d (it fixes each client's choices, not the interleaving)", r.seed)

	begin := time.Now()
	runCtx, stopClients := context.WithTimeout(context.Background(), 4*phaseLimit)
	var wg sync.WaitGroup
	defer func() {
		stopClients()
		wg.Wait()
	}()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.client(runCtx, i)
		}()
	}
	waitOK := func(ok, grants *atomic.Int64, nOK, nGrants int64) {
		c.Eventually(phaseLimit, func() bool { return ok.Load() >= nOK && grants.Load() >= nGrants })
	}
	waitOK(&r.ok, &r.grants, minOK/3, minGrants/3)
	old := c.WaitLeader(5 * time.Second)
	r.h.Mark("cluster", fmt.Sprintf("stopping leader n%d", old+1))
	c.Stop(old)
	r.stopped.Store(true)
	r.h.Mark("cluster", fmt.Sprintf("leader n%d stopped", old+1))
	elected := time.Now()
	newLeader := c.WaitLeader(10 * time.Second)
	r.h.Mark("cluster", fmt.Sprintf("n%d leads", newLeader+1))
	t.Logf("stopped leader n%d at %v; n%d leads %v later", old+1, time.Since(begin).Round(time.Millisecond), newLeader+1, time.Since(elected).Round(time.Millisecond))

	waitOK(&r.okAfterStop, &r.grantsAfterStop, minOKAfterStop, minGrantsAfterStop)
	c.Restart(old)
	r.h.Mark("cluster", fmt.Sprintf("n%d restarted", old+1))
	waitOK(&r.ok, &r.grants, minOK+minOK/3, minGrants+minGrants/3)
	stopClients()
	wg.Wait()

	counts := r.h.Counts()
	t.Logf("%d operations in %v: %d decided (%d after the leader stop), %d grants and releases (%d after the stop), %d adopted, %d outcome unknown %v, %d dropped (%d reads, %d writes certainly not applied); outcomes %s",
		counts.Returned+counts.Unknown+counts.Dropped, time.Since(begin).Round(time.Millisecond),
		r.ok.Load(), r.okAfterStop.Load(), r.grants.Load(), r.grantsAfterStop.Load(), r.adopted.Load(),
		counts.Unknown, r.tally(r.unknown), counts.Dropped, r.droppedReads.Load(), r.droppedWrites.Load(), r.tally(r.outcomes))
	if counts.Pending != 0 {
		t.Errorf("%d operations were never resolved", counts.Pending)
	}
	if res := linearizability.Check(t, linearizability.CapacityModel(capLinCells), r.h, 15*time.Second); res != porcupine.Ok {
		t.Fatalf("linearizability check: %s (seed %d)", res, r.seed)
	}
	for _, u := range r.unexpectedErrors() {
		t.Errorf("unexpected error (neither a decision nor unavailable): %s", u)
	}
	if n := r.ok.Load(); n < minOK {
		t.Errorf("only %d operations were decided, want at least %d: a history of nothing proves nothing", n, minOK)
	}
	if n := r.okAfterStop.Load(); n < minOKAfterStop {
		t.Errorf("only %d operations were decided after the leader stopped, want at least %d", n, minOKAfterStop)
	}
	if n := r.grants.Load(); n < minGrants {
		t.Errorf("only %d acquires were granted or leases released, want at least %d", n, minGrants)
	}
	if n := r.grantsAfterStop.Load(); n < minGrantsAfterStop {
		t.Errorf("only %d acquires were granted or leases released after the leader stopped, want at least %d", n, minGrantsAfterStop)
	}
	for _, kind := range []string{"acquire/exhausted", "renew/granted", "release/granted"} {
		if r.outcomes[kind] == 0 {
			t.Errorf("no %s in the run: the history does not exercise it", kind)
		}
	}

	c.WaitConverged(10 * time.Second)
	for _, i := range c.Running() {
		capCheckNodeUsage(t, c.Node(i), fmt.Sprintf("n%d", i+1))
	}
}

// capCheckNodeUsage reads node's local state (stale reads, no leader
// involved) and requires, for every cell of the run, usage within capacity
// and equal to the sum of the cell's active leases, and no lease fence
// above the cell's last fence.
func capCheckNodeUsage(t *testing.T, node *cluster.Node, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc := capacity.NewService(node, node)
	for cell, limit := range capLinCells {
		st, err := svc.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capLinTenant, CellID: cell, MaxCount: 1}, fsm.Stale)
		if err != nil || len(st.Cells) != 1 || len(st.Cells[0].Classes) != 1 {
			t.Fatalf("%s: status of %s: %+v %v", name, cell, st, err)
		}
		class := st.Cells[0].Classes[0]
		if class.Capacity != limit || class.Used > class.Capacity {
			t.Errorf("%s: cell %s uses %d of %d (want capacity %d)", name, cell, class.Used, class.Capacity, limit)
		}
		var sum uint64
		var leases, active int
		cursor := ""
		for page := 0; ; page++ {
			rc, err := svc.Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capLinTenant, CellID: cell, MaxCount: capacity.MaxRowsPerPage, Cursor: cursor}, fsm.Stale)
			if err != nil {
				t.Fatalf("%s: reconcile of %s: %v", name, cell, err)
			}
			for _, l := range rc.Leases {
				leases++
				if l.CellID != cell {
					t.Errorf("%s: reconcile of %s returned lease %s of cell %s", name, cell, l.LeaseID, l.CellID)
				}
				if l.FenceToken > st.Cells[0].LastFence {
					t.Errorf("%s: lease %s holds fence %d above the cell's last fence %d", name, l.LeaseID, l.FenceToken, st.Cells[0].LastFence)
				}
				if l.State == capacity.LeaseActive {
					sum += l.Amount
					active++
				}
			}
			if cursor = rc.NextCursor; cursor == "" {
				break
			}
			if page > 100 {
				t.Fatalf("%s: reconcile of %s does not end", name, cell)
			}
		}
		if sum != class.Used {
			t.Errorf("%s: cell %s uses %d but its %d active leases (of %d) sum to %d", name, cell, class.Used, active, leases, sum)
		}
		if uint64(leases) != st.Cells[0].LastFence {
			t.Errorf("%s: cell %s has handed out %d fences but holds %d leases (none may be pruned within an hour)", name, cell, st.Cells[0].LastFence, leases)
		}
		t.Logf("%s: %s uses %d of %d in %d active leases; %d fences handed out", name, cell, class.Used, limit, active, leases)
	}
}

// capRun is one run of the capacity clients.
type capRun struct {
	t         *testing.T
	c         *clustertest.Cluster
	h         *linearizability.History
	seed      uint64
	opTimeout time.Duration
	stopped   atomic.Bool

	ok, okAfterStop, grants, grantsAfterStop atomic.Int64
	droppedReads, droppedWrites, adopted     atomic.Int64

	mu       sync.Mutex
	held     map[string]bool // lease ids some client holds
	outcomes map[string]int  // "kind/decision" of decided calls
	unknown  map[string]int  // by error code
	odd      []string        // errors that are neither decided nor unavailable
}

// capHolding is a lease token a client may present.
type capHolding struct {
	id, cell, owner string
	fence, epoch    uint64
}

func (r *capRun) node(i int) *cluster.Node {
	if n := r.c.Node(i % r.c.Size()); n != nil {
		return n
	}
	for _, j := range r.c.Running() {
		if n := r.c.Node((j + i) % r.c.Size()); n != nil {
			return n
		}
	}
	return nil
}

func capLinCellNames() []string {
	names := make([]string, 0, len(capLinCells))
	for c := range capLinCells {
		names = append(names, c)
	}
	sort.Strings(names)
	return names
}

// hold registers id as held; it reports false if someone holds it already.
func (r *capRun) hold(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[id] {
		return false
	}
	r.held[id] = true
	return true
}

func (r *capRun) unhold(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, id)
}

// client runs random calls until ctx ends: acquires, renewals and releases
// of what it holds, stale tokens on purpose, status reads, and now and
// then the adoption of leases nobody holds.
func (r *capRun) client(ctx context.Context, i int) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(i)))
	owner := fmt.Sprintf("o%d", i%4)
	cells := capLinCellNames()
	var holdings, stale []capHolding
	drop := func(k int) capHolding {
		h := holdings[k]
		holdings = append(holdings[:k], holdings[k+1:]...)
		return h
	}
	for n := 0; ctx.Err() == nil; n++ {
		node := r.node(i)
		if node == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		svc := capacity.NewService(node, node)
		p := rng.IntN(100)
		switch {
		case p < 5 && len(holdings) < 3:
			r.adopt(svc, rng, cells, owner, &holdings)
		case p < 40 || len(holdings) == 0:
			if len(holdings) >= 3 {
				h := drop(rng.IntN(len(holdings)))
				r.releaseOrRenew(svc, i, linearizability.CapRelease, h, &holdings, &stale)
				continue
			}
			in := linearizability.CapInput{Kind: linearizability.CapAcquire, Cell: cells[rng.IntN(len(cells))], Owner: owner, Amount: uint64(1 + rng.IntN(3))}
			if lease, ok := r.acquire(svc, i, in, fmt.Sprintf("c%d-%d", i, n)); ok {
				holdings = append(holdings, lease)
			}
		case p < 62:
			h := drop(rng.IntN(len(holdings)))
			r.releaseOrRenew(svc, i, linearizability.CapRenew, h, &holdings, &stale)
		case p < 84:
			h := drop(rng.IntN(len(holdings)))
			r.releaseOrRenew(svc, i, linearizability.CapRelease, h, &holdings, &stale)
		case p < 90 && len(stale) > 0:
			h := stale[rng.IntN(len(stale))]
			kind := linearizability.CapRenew
			if rng.IntN(2) == 0 {
				kind = linearizability.CapRelease
			}
			var ignored []capHolding
			r.releaseOrRenew(svc, i, kind, h, &ignored, &ignored)
		default:
			r.status(svc, i, cells[rng.IntN(len(cells))])
		}
		if len(stale) > 8 {
			stale = stale[len(stale)-8:]
		}
	}
}

// adopt reads a cell's leases and takes over an active one nobody holds
// (most are those of acquires whose outcome was unknown) or, now and then,
// one of its owner's that another client holds: then both present it.
func (r *capRun) adopt(svc *capacity.Service, rng *rand.Rand, cells []string, owner string, holdings *[]capHolding) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	rc, err := svc.Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capLinTenant,
		CellID: cells[rng.IntN(len(cells))], MaxCount: capacity.MaxRowsPerPage}, fsm.Linearizable)
	if err != nil {
		return
	}
	share := rng.IntN(3) == 0
	for _, l := range rc.Leases {
		if l.State == capacity.LeaseActive && (r.hold(l.LeaseID) || share && l.OwnerDigest == owner) {
			*holdings = append(*holdings, capHolding{id: l.LeaseID, cell: l.CellID, owner: l.OwnerDigest, fence: l.FenceToken, epoch: l.LeaseEpoch})
			r.adopted.Add(1)
			return
		}
	}
}

func (r *capRun) acquire(svc *capacity.Service, client int, in linearizability.CapInput, key string) (capHolding, bool) {
	afterStop := r.stopped.Load()
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	op := r.h.Call(client, in)
	res, err := svc.Acquire(ctx, capacity.AcquireRequest{SchemaVersion: "1", TenantRef: capLinTenant, WorkItemID: key,
		OwnerDigest: in.Owner, IdempotencyKey: key, TTLMs: time.Hour.Milliseconds(),
		Demands: []capacity.Demand{{CellID: in.Cell, ResourceClass: capLinClass, Amount: in.Amount}}})
	if res == nil || res.Decision == "" {
		r.failed(op, in, err, true)
		return capHolding{}, false
	}
	out := linearizability.CapOutput{Decision: string(res.Decision)}
	if len(res.Available) == 1 {
		out.Used = res.Available[0].Used
	}
	var lease capHolding
	granted := res.Decision == capacity.Granted && len(res.Leases) == 1
	if granted {
		l := res.Leases[0]
		out.Fence = l.FenceToken
		lease = capHolding{id: l.LeaseID, cell: l.CellID, owner: in.Owner, fence: l.FenceToken, epoch: l.LeaseEpoch}
		r.hold(l.LeaseID)
	}
	r.decided(op, in, out, afterStop, granted)
	return lease, granted
}

// releaseOrRenew presents h; what the client still holds afterwards goes
// back to holdings, what it no longer may present goes to stale.
func (r *capRun) releaseOrRenew(svc *capacity.Service, client int, kind linearizability.CapKind, h capHolding, holdings, stale *[]capHolding) {
	afterStop := r.stopped.Load()
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	in := linearizability.CapInput{Kind: kind, Cell: h.cell, Owner: h.owner, Fence: h.fence, Epoch: h.epoch}
	req := capacity.LeasesRequest{SchemaVersion: "1", TenantRef: capLinTenant, OwnerDigest: h.owner,
		Leases: []capacity.LeaseRef{{LeaseID: h.id, LeaseEpoch: h.epoch, FenceToken: h.fence}}}
	op := r.h.Call(client, in)
	call := svc.Renew
	if kind == linearizability.CapRelease {
		call = svc.Release
	}
	res, err := call(ctx, req)
	if res == nil || res.Decision == "" {
		r.failed(op, in, err, true)
		// Whether it moved is unknown: let anyone adopt it afresh.
		r.unhold(h.id)
		return
	}
	out := linearizability.CapOutput{Decision: string(res.Decision)}
	granted := res.Decision == capacity.Granted && len(res.Leases) == 1
	switch {
	case granted && kind == linearizability.CapRenew:
		out.Epoch = res.Leases[0].LeaseEpoch
		*stale = append(*stale, h)
		h.epoch = out.Epoch
		*holdings = append(*holdings, h)
	case granted:
		*stale = append(*stale, h)
		r.unhold(h.id)
	default:
		// Someone else moved or ended it: the token is stale now.
		*stale = append(*stale, h)
	}
	r.decided(op, in, out, afterStop, granted && kind == linearizability.CapRelease)
}

func (r *capRun) status(svc *capacity.Service, client int, cell string) {
	afterStop := r.stopped.Load()
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	in := linearizability.CapInput{Kind: linearizability.CapStatus, Cell: cell}
	op := r.h.Call(client, in)
	st, err := svc.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capLinTenant, CellID: cell, MaxCount: 1}, fsm.Linearizable)
	if err != nil {
		r.failed(op, in, err, false)
		return
	}
	if len(st.Cells) != 1 || len(st.Cells[0].Classes) != 1 {
		r.mu.Lock()
		r.odd = append(r.odd, fmt.Sprintf("status of %s: %+v", cell, st))
		r.mu.Unlock()
		op.Drop()
		return
	}
	r.decided(op, in, linearizability.CapOutput{Used: st.Cells[0].Classes[0].Used, LastFence: st.Cells[0].LastFence}, afterStop, false)
}

func (r *capRun) decided(op *linearizability.Op, in linearizability.CapInput, out linearizability.CapOutput, afterStop, effective bool) {
	op.Return(out)
	r.ok.Add(1)
	if afterStop {
		r.okAfterStop.Add(1)
	}
	if effective || in.Kind == linearizability.CapAcquire && out.Decision == linearizability.CapGranted {
		r.grants.Add(1)
		if afterStop {
			r.grantsAfterStop.Add(1)
		}
	}
	decision := out.Decision
	if decision == "" {
		decision = "ok"
	}
	r.mu.Lock()
	r.outcomes[fmt.Sprintf("%v/%s", in.Kind, decision)]++
	r.mu.Unlock()
}

func (r *capRun) failed(op *linearizability.Op, in linearizability.CapInput, err error, write bool) {
	op.Fail(err, write)
	code := errs.CodeOf(err)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !errors.Is(err, errs.Unavailable) {
		r.odd = append(r.odd, fmt.Sprintf("%s: %v", linearizability.CapacityModel(capLinCells).DescribeOperation(in, linearizability.UnknownOutput{}), err))
	}
	switch {
	case !write:
		r.droppedReads.Add(1)
	case linearizability.CertainlyNotApplied(err):
		r.droppedWrites.Add(1)
	default:
		r.unknown[string(code)]++
	}
}

func (r *capRun) tally(m map[string]int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", k, n))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func (r *capRun) unexpectedErrors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.odd...)
}
