package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
)

// Capacity is the workload of capacity leases: clients, each with a
// capacity.Service over its node, acquire, renew, release and
// linearizably read leases on a few small cells, so that grants and
// exhaustion alternate. Clients i and i+4 share an owner, so one may renew
// or release a lease the other holds: the loser sees stale_epoch or
// stale_fence. Clients also present stale tokens on purpose, and adopt
// leases nobody holds (those of acquires whose outcome was unknown) from
// Reconcile, so unknown grants do not leak capacity. The TTL is an hour:
// expiry is not part of a run.
//
// Every generation has its own cells (capacityCells), created in Setup,
// so each cell's history spans one fault boundary. Which leases some
// client holds is shared by every client, so it lives in the workload:
// make one with NewCapacity.
type Capacity struct {
	// StaleReads reads status from the local replica instead of
	// linearizably: a deliberate bug, for the control that shows the
	// harness catches one. It also reads more often (staleReadShare).
	StaleReads bool

	mu   sync.Mutex
	held map[string]bool // lease ids some client holds
}

// NewCapacity returns the capacity workload.
func NewCapacity() *Capacity {
	w := &Capacity{}
	w.reset()
	return w
}

const (
	capacityTenant = "tenant-chaos"
	capacityClass  = "slot"
	// maxHoldings is how many leases of one generation a client holds
	// before it releases one instead of acquiring.
	maxHoldings = 3
	// maxStale is how many stale tokens a client keeps to present.
	maxStale = 8
	// staleReadShare is the percentage of steps that read status when
	// StaleReads is set, on top of the usual one in ten or so. The
	// control needs reads on a lagging replica, and a follower's
	// clients spend a partition blocked in writes that wait for the
	// leader: with one read in ten, porcupine caught nothing in 2 of 2
	// CI runs at 0a01df9 and in 1 of 8 runs made four at a time
	// (it caught them in 12 of 12 with this share). The nodes workload
	// reads 4 steps in 10.
	staleReadShare = 30
)

// capacityLimits are each generation's cells (by suffix) and their
// capacity of capacityClass: small, so that grants and exhaustion
// alternate, and many, so that each cell's history stays short enough
// for porcupine (a cell's leases are ordered by fence, so every unknown
// acquire multiplies the orders to try).
var capacityLimits = map[string]uint64{"lin-a": 6, "lin-b": 6, "lin-c": 5, "lin-d": 6, "lin-e": 6, "lin-f": 5}

// capacityGenerations is how many generations of cells a run has: one
// for every generation Recorder.Generation can return under Faults.
var capacityGenerations = MaxGenerations(len(Faults))

func capacityCell(g int, suffix string) string { return fmt.Sprintf("g%d-%s", g, suffix) }

// capacityCells lists generation g's cells, in order.
func capacityCells(g int) []string {
	cells := make([]string, 0, len(capacityLimits))
	for suffix := range capacityLimits {
		cells = append(cells, capacityCell(g, suffix))
	}
	sort.Strings(cells)
	return cells
}

// capacityOfCells maps every cell of every generation to its capacity.
func capacityOfCells() map[string]uint64 {
	out := map[string]uint64{}
	for g := 0; g < capacityGenerations; g++ {
		for suffix, limit := range capacityLimits {
			out[capacityCell(g, suffix)] = limit
		}
	}
	return out
}

func (w *Capacity) Name() string {
	if w.StaleReads {
		return "capacity-stale-reads"
	}
	return "capacity"
}

// Model is partitioned by cell, so each cell's short history is checked
// on its own.
func (w *Capacity) Model() (porcupine.Model, bool) { return lin.CapacityModel(capacityOfCells()), true }

// Setup creates every generation's cells through the leader and forgets
// the leases clients of an earlier run held (one workload value may serve
// many runs: -count, soaks).
func (w *Capacity) Setup(ctx context.Context, c *clustertest.Cluster) error {
	w.reset()
	leader := c.Node(c.WaitLeader(timeout))
	svc := capacity.NewService(leader, leader)
	for cell, limit := range capacityOfCells() {
		if _, err := svc.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: capacityTenant,
			Cell: capacity.CellSpec{CellID: cell, Capacities: map[string]uint64{capacityClass: limit}}}); err != nil {
			return fmt.Errorf("create cell %s: %w", cell, err)
		}
	}
	return nil
}

func (w *Capacity) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = map[string]bool{}
}

// hold registers id as held; it reports false if someone holds it already.
func (w *Capacity) hold(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held[id] {
		return false
	}
	w.held[id] = true
	return true
}

func (w *Capacity) unhold(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.held, id)
}

func (w *Capacity) Client(i int, seed uint64) Client {
	return &capacityClient{w: w, id: i, owner: fmt.Sprintf("o%d", i%4), rng: rand.New(rand.NewPCG(seed, uint64(i)))}
}

// capHolding is a lease token a client may present.
type capHolding struct {
	id, cell, owner string
	generation      int
	fence, epoch    uint64
}

// capacityClient makes random calls on one generation's cells at a time:
// acquires, renewals and releases of what it holds, stale tokens on
// purpose, status reads, and now and then the adoption of leases nobody
// holds.
type capacityClient struct {
	w     *Capacity
	id    int
	owner string
	rng   *rand.Rand
	steps int // names each acquire's idempotency key

	holdings, stale []capHolding
}

func (c *capacityClient) Step(node *cluster.Node, rec *Recorder) {
	c.steps++
	g := rec.Generation(c.rng)
	c.forgetBefore(g - 1)
	svc := capacity.NewService(node, node)
	cells := capacityCells(g)
	mine, stale := inGeneration(c.holdings, g), inGeneration(c.stale, g)
	if c.w.StaleReads && c.rng.IntN(100) < staleReadShare {
		c.status(svc, cells[c.rng.IntN(len(cells))], rec)
		return
	}
	switch p := c.rng.IntN(100); {
	case p < 5 && len(mine) < maxHoldings:
		c.adopt(svc, g, cells[c.rng.IntN(len(cells))], rec)
	case p < 40 || len(mine) == 0:
		if len(mine) >= maxHoldings {
			c.present(svc, lin.CapRelease, c.take(mine[c.rng.IntN(len(mine))]), rec)
			return
		}
		in := lin.CapInput{Kind: lin.CapAcquire, Cell: cells[c.rng.IntN(len(cells))], Owner: c.owner, Amount: uint64(1 + c.rng.IntN(3))}
		c.acquire(svc, g, in, rec)
	case p < 62:
		c.present(svc, lin.CapRenew, c.take(mine[c.rng.IntN(len(mine))]), rec)
	case p < 84:
		c.present(svc, lin.CapRelease, c.take(mine[c.rng.IntN(len(mine))]), rec)
	case p < 90 && len(stale) > 0:
		c.presentStale(svc, c.stale[stale[c.rng.IntN(len(stale))]], rec)
	default:
		c.status(svc, cells[c.rng.IntN(len(cells))], rec)
	}
	if len(c.stale) > maxStale {
		c.stale = c.stale[len(c.stale)-maxStale:]
	}
}

// forgetBefore drops the holdings and stale tokens of generations before
// g: no later step picks them (generations only move on), and presenting
// them would stretch their cells' histories across more fault boundaries.
// Their leases stay active in cells nobody uses any more.
func (c *capacityClient) forgetBefore(g int) {
	keep := func(hs []capHolding) []capHolding {
		out := hs[:0]
		for _, h := range hs {
			if h.generation >= g {
				out = append(out, h)
			}
		}
		return out
	}
	c.holdings, c.stale = keep(c.holdings), keep(c.stale)
}

// inGeneration lists the indexes of hs that belong to generation g.
func inGeneration(hs []capHolding, g int) []int {
	var out []int
	for k, h := range hs {
		if h.generation == g {
			out = append(out, k)
		}
	}
	return out
}

// take removes holding k and returns it.
func (c *capacityClient) take(k int) capHolding {
	h := c.holdings[k]
	c.holdings = append(c.holdings[:k], c.holdings[k+1:]...)
	return h
}

// adopt reads a cell's leases and takes over an active one nobody holds
// (most are those of acquires whose outcome was unknown) or, now and then,
// one of its owner's that another client holds: then both present it. The
// read is not part of the history (the model has no lease listing), so a
// failure only skips the adoption.
func (c *capacityClient) adopt(svc *capacity.Service, g int, cell string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	rc, err := svc.Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capacityTenant,
		CellID: cell, MaxCount: capacity.MaxRowsPerPage}, fsm.Linearizable)
	if err != nil {
		return
	}
	share := c.rng.IntN(3) == 0
	for _, l := range rc.Leases {
		if l.State == capacity.LeaseActive && (c.w.hold(l.LeaseID) || share && l.OwnerDigest == c.owner) {
			c.holdings = append(c.holdings, capHolding{id: l.LeaseID, cell: l.CellID, owner: l.OwnerDigest, generation: g,
				fence: l.Fence, epoch: l.LeaseEpoch})
			return
		}
	}
}

func (c *capacityClient) acquire(svc *capacity.Service, g int, in lin.CapInput, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	key := fmt.Sprintf("c%d-%d", c.id, c.steps)
	call := rec.Call(c.id, in)
	res, err := svc.Acquire(ctx, capacity.AcquireRequest{SchemaVersion: "1", TenantRef: capacityTenant, WorkItemID: key,
		OwnerDigest: in.Owner, IdempotencyKey: key, TTLMs: time.Hour.Milliseconds(),
		Demands: []capacity.Demand{{CellID: in.Cell, ResourceClass: capacityClass, Amount: in.Amount}}})
	if res == nil || res.Decision == "" {
		c.fail(call, err, true)
		return
	}
	out := lin.CapOutput{Decision: string(res.Decision)}
	if len(res.Available) == 1 {
		out.Used = res.Available[0].Used
	}
	granted := res.Decision == capacity.Granted && len(res.Leases) == 1
	if granted {
		l := res.Leases[0]
		rec.ReadBack(fmt.Sprintf("acquire of lease %s (fence %d)", l.LeaseID, l.Fence), readBackLease(l, func(got capacity.Lease) bool {
			return got.Fence == l.Fence
		}))
		out.Fence = l.Fence
		c.holdings = append(c.holdings, capHolding{id: l.LeaseID, cell: l.CellID, owner: in.Owner, generation: g,
			fence: l.Fence, epoch: l.LeaseEpoch})
		c.w.hold(l.LeaseID)
	}
	capDecided(call, in, out, granted)
}

// present renews or releases h: what the client still holds afterwards
// goes back to its holdings, and the token it presented, which it may no
// longer present as its own, to its stale tokens.
func (c *capacityClient) present(svc *capacity.Service, kind lin.CapKind, h capHolding, rec *Recorder) {
	res, decided := c.renewOrRelease(svc, kind, h, rec)
	if !decided {
		return
	}
	granted := res.Decision == capacity.Granted && len(res.Leases) == 1
	c.stale = append(c.stale, h)
	switch {
	case granted && kind == lin.CapRenew:
		h.epoch = res.Leases[0].LeaseEpoch
		c.holdings = append(c.holdings, h)
	case granted:
		c.w.unhold(h.id)
	}
	// Otherwise someone else moved or ended it: the token is stale now.
}

// presentStale renews or releases a token the client no longer holds, on
// purpose; whatever it gets, it keeps nothing from it.
func (c *capacityClient) presentStale(svc *capacity.Service, h capHolding, rec *Recorder) {
	kind := lin.CapRenew
	if c.rng.IntN(2) == 0 {
		kind = lin.CapRelease
	}
	c.renewOrRelease(svc, kind, h, rec)
}

// renewOrRelease presents h, records the call, and returns its result if
// decided.
func (c *capacityClient) renewOrRelease(svc *capacity.Service, kind lin.CapKind, h capHolding, rec *Recorder) (*capacity.LeasesResult, bool) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.CapInput{Kind: kind, Cell: h.cell, Owner: h.owner, Fence: h.fence, Epoch: h.epoch}
	req := capacity.LeasesRequest{SchemaVersion: "1", TenantRef: capacityTenant, OwnerDigest: h.owner,
		Leases: []capacity.LeaseRef{{LeaseID: h.id, LeaseEpoch: h.epoch, Fence: h.fence}}}
	do := svc.Renew
	if kind == lin.CapRelease {
		do = svc.Release
	}
	call := rec.Call(c.id, in)
	res, err := do(ctx, req)
	if res == nil || res.Decision == "" {
		c.fail(call, err, true)
		// Whether it moved is unknown: let anyone adopt it afresh.
		c.w.unhold(h.id)
		return nil, false
	}
	out := lin.CapOutput{Decision: string(res.Decision)}
	granted := res.Decision == capacity.Granted && len(res.Leases) == 1
	if granted && kind == lin.CapRenew {
		out.Epoch = res.Leases[0].LeaseEpoch
	}
	if granted {
		l := res.Leases[0]
		rec.ReadBack(fmt.Sprintf("%v of lease %s (epoch %d)", kind, l.LeaseID, l.LeaseEpoch), readBackLease(l, func(got capacity.Lease) bool {
			if kind == lin.CapRelease {
				return got.State != capacity.LeaseActive
			}
			return got.LeaseEpoch >= l.LeaseEpoch
		}))
	}
	capDecided(call, in, out, granted)
	return res, true
}

func (c *capacityClient) status(svc *capacity.Service, cell string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.CapInput{Kind: lin.CapStatus, Cell: cell}
	call := rec.Call(c.id, in)
	read := fsm.Linearizable
	if c.w.StaleReads {
		read = fsm.Stale
	}
	st, err := svc.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capacityTenant, CellID: cell, MaxCount: 1}, read)
	switch {
	case err != nil:
		c.fail(call, err, false)
	case len(st.Cells) != 1 || len(st.Cells[0].Classes) != 1:
		call.Unexpected(fmt.Sprintf("status of %s: %+v", cell, st))
	default:
		capDecided(call, in, lin.CapOutput{Used: st.Cells[0].Classes[0].Used, LastFence: st.Cells[0].LastFence}, false)
	}
}

// readBackLease checks that a replica holds lease acked as ok says it
// must be (the same fence for a grant, an epoch at least the renewed one,
// an end for a release).
func readBackLease(acked capacity.Lease, ok func(capacity.Lease) bool) func(context.Context, *cluster.Node) error {
	return func(ctx context.Context, node *cluster.Node) error {
		rc, err := capacity.NewService(node, node).Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: acked.TenantRef,
			CellID: acked.CellID, LeaseID: acked.LeaseID, MaxCount: 1}, fsm.Stale)
		if err != nil {
			return err
		}
		if len(rc.Leases) != 1 || rc.Leases[0].LeaseID != acked.LeaseID {
			return fmt.Errorf("lease %s missing (read %d leases)", acked.LeaseID, len(rc.Leases))
		}
		if got := rc.Leases[0]; !ok(got) {
			return fmt.Errorf("lease %s is %s at epoch %d with fence %d", got.LeaseID, got.State, got.LeaseEpoch, got.Fence)
		}
		return nil
	}
}

// fail records a call without a decision. A call that returned neither a
// decision nor an error is not one the model can take.
func (c *capacityClient) fail(call *Call, err error, write bool) {
	if err == nil {
		call.Unexpected("neither a decision nor an error")
		return
	}
	call.Failed(err, write)
}

// capDecided records a decided call; granted is a grant of an acquire,
// renew or release, each of which changes the cell (usage, a lease's
// epoch, a lease's end).
func capDecided(call *Call, in lin.CapInput, out lin.CapOutput, granted bool) {
	decision := out.Decision
	if decision == "" {
		decision = "ok"
	}
	call.Decided(out, fmt.Sprintf("%v/%s", in.Kind, decision), granted)
}

// Verify reads node's local state (stale reads, no leader involved) and
// requires, for every cell of every generation, usage within capacity and
// equal to the sum of the cell's active leases, no lease fence above the
// cell's last fence, and one lease per fence handed out (none may be
// pruned within an hour).
func (w *Capacity) Verify(ctx context.Context, node *cluster.Node) error {
	svc := capacity.NewService(node, node)
	limits := capacityOfCells()
	var problems []error
	for g := 0; g < capacityGenerations; g++ {
		for _, cell := range capacityCells(g) {
			problems = append(problems, verifyCell(ctx, svc, cell, limits[cell]))
		}
	}
	return errors.Join(problems...)
}

func verifyCell(ctx context.Context, svc *capacity.Service, cell string, limit uint64) error {
	st, err := svc.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capacityTenant, CellID: cell, MaxCount: 1}, fsm.Stale)
	if err != nil || len(st.Cells) != 1 || len(st.Cells[0].Classes) != 1 {
		return fmt.Errorf("status of %s: %+v %v", cell, st, err)
	}
	status, class := st.Cells[0], st.Cells[0].Classes[0]
	var problems []error
	if class.Capacity != limit || class.Used > class.Capacity {
		problems = append(problems, fmt.Errorf("cell %s uses %d of %d (want capacity %d)", cell, class.Used, class.Capacity, limit))
	}
	leases, err := cellLeases(ctx, svc, cell)
	if err != nil {
		return errors.Join(append(problems, err)...)
	}
	var sum uint64
	var active int
	for _, l := range leases {
		if l.CellID != cell {
			problems = append(problems, fmt.Errorf("reconcile of %s returned lease %s of cell %s", cell, l.LeaseID, l.CellID))
		}
		if l.Fence > status.LastFence {
			problems = append(problems, fmt.Errorf("lease %s holds fence %d above cell %s's last fence %d", l.LeaseID, l.Fence, cell, status.LastFence))
		}
		if l.State == capacity.LeaseActive {
			sum += l.Amount
			active++
		}
	}
	if sum != class.Used {
		problems = append(problems, fmt.Errorf("cell %s uses %d but its %d active leases (of %d) sum to %d", cell, class.Used, active, len(leases), sum))
	}
	// None may be pruned within an hour: the cell holds a lease for every
	// fence it handed out, the last one its LastFence, each fence once.
	fences := fencesOf(leases)
	for i := 1; i < len(fences); i++ {
		if fences[i] == fences[i-1] {
			problems = append(problems, fmt.Errorf("cell %s handed out fence %d twice", cell, fences[i]))
		}
	}
	if n := len(fences); n > 0 && fences[n-1] != status.LastFence || n == 0 && status.LastFence != 0 {
		problems = append(problems, fmt.Errorf("cell %s's last fence is %d but its leases hold fences %v", cell, status.LastFence, fences))
	}
	return errors.Join(problems...)
}

// fencesOf is the leases' fence tokens, ascending.
func fencesOf(leases []capacity.Lease) []uint64 {
	out := make([]uint64, 0, len(leases))
	for _, l := range leases {
		out = append(out, l.Fence)
	}
	slices.Sort(out)
	return out
}

// RewriteHistory turns every fence token in the history into its order of
// issue on its cell (1, 2, 3, ...), which is what the model knows fences
// by. Tokens derive from the log index (capacity_acquire version 2) and
// are opaque until the run is over; the converged state holds every lease
// ever granted (none is pruned within an hour), so it lists them all.
func (w *Capacity) RewriteHistory(ctx context.Context, node *cluster.Node, h *lin.History) error {
	svc := capacity.NewService(node, node)
	order := newFenceOrder()
	for g := 0; g < capacityGenerations; g++ {
		for _, cell := range capacityCells(g) {
			leases, err := cellLeases(ctx, svc, cell)
			if err != nil {
				return err
			}
			for _, f := range fencesOf(leases) {
				order.add(cell, f)
			}
		}
	}
	h.Rewrite(func(input, output any) (any, any) {
		in := input.(lin.CapInput)
		in.Fence = order.ordinal(in.Cell, in.Fence)
		if out, ok := output.(lin.CapOutput); ok {
			out.Fence, out.LastFence = order.ordinal(in.Cell, out.Fence), order.ordinal(in.Cell, out.LastFence)
			output = out
		}
		return in, output
	})
	return order.err()
}

// cellLeases reads every lease of cell from the local replica, page by
// page.
func cellLeases(ctx context.Context, svc *capacity.Service, cell string) ([]capacity.Lease, error) {
	var out []capacity.Lease
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		rc, err := svc.Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: capacityTenant, CellID: cell,
			MaxCount: capacity.MaxRowsPerPage, Cursor: cursor}, fsm.Stale)
		if err != nil {
			return nil, fmt.Errorf("reconcile of %s: %w", cell, err)
		}
		out = append(out, rc.Leases...)
		if cursor = rc.NextCursor; cursor == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("reconcile of %s does not end within 100 pages", cell)
}
