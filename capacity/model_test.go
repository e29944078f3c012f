package capacity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// The reference model of capacity cells and leases: plain maps and the
// rules of the spec, applied one command at a time. TestCapacityModel
// (at the end of this file) drives the service and the model side by side.

// mCell is a cell as the model holds it.
type mCell struct {
	epoch     uint64
	caps      map[string]uint64
	used      map[string]uint64 // no zero entries
	lastFence uint64
	updatedAt int64
}

// mIdem is one idempotency ledger row.
type mIdem struct {
	fingerprint string
	created     int64
	id          string // the ledger's row id: it orders the pruning of rows of one instant
	result      any    // the first result, as returned (Replayed false)
}

// capModel is the whole reference state. Cells and leases are keyed by
// graph ("" the default one), tenant and id: two graphs of a tenant share
// nothing.
type capModel struct {
	clock int64 // the proposer's clock
	now   int64 // FSM time: the largest stamp applied
	cells map[mKey]*mCell
	// leases holds every lease the FSM still stores, in any state.
	leases map[mKey]*capacity.Lease
	ledger map[string]*mIdem
	// topFence is the highest fence ever granted per cell; ended names
	// every lease (by leaseIdentity) that has ended.
	topFence map[mKey]uint64
	ended    map[string]bool
	// tenantKeyed: the cluster enables the tenant-keyed ledger
	// (capacity_acquire 4, renew and release 3), whose scopes end in
	// "/<tenant>" and whose row ids are the FSM's tenant-keyed ones.
	tenantKeyed bool
}

func newCapModel(clock int64) *capModel {
	return &capModel{clock: clock, cells: map[mKey]*mCell{}, leases: map[mKey]*capacity.Lease{},
		ledger: map[string]*mIdem{}, topFence: map[mKey]uint64{}, ended: map[string]bool{}}
}

// mKey names a cell or a lease: its graph, tenant and id.
type mKey struct{ graph, tenant, id string }

// mGraph is a request's graph as the FSM keys it: "" for the default
// graph, by either name.
func mGraph(g string) string {
	if g == capacity.DefaultGraph {
		return ""
	}
	return g
}

// leaseIdentity names one lease for good: an id may be used again once
// its lease is pruned, but never with the same cell and fence.
func leaseIdentity(l *capacity.Lease) string {
	return fmt.Sprintf("%q/%s/%s@%s#%d", l.GraphRef, l.TenantRef, l.LeaseID, l.CellID, l.Fence)
}

// stamp is what the FSM does first with every decodable command.
func (m *capModel) stamp() { m.now = max(m.now, m.clock) }

func (m *capModel) ledgerKey(scope, key string) string { return scope + "\x00" + key }

// capScope is the service's idempotency scope of an operation in a tenant
// (a digest of the tenant ref, so that any tenant ref fits the envelope).
func capScope(op, tenant string) string {
	sum := sha256.Sum256([]byte(tenant))
	return "capacity/" + op + "/" + hex.EncodeToString(sum[:16])
}

// capGraphScope is the scope in a graph: capScope in the default graph
// (so that keys written before graphs still replay), a digest of tenant
// and graph in any other.
func capGraphScope(op, tenant, graph string) string {
	if graph == "" {
		return capScope(op, tenant)
	}
	sum := sha256.Sum256([]byte(tenant + "\x00" + graph))
	return "capacity/" + op + "/" + hex.EncodeToString(sum[:16])
}

// ledgerID is the FSM's row id for a trusted principal (or, tenant-keyed,
// for any): it decides which rows of one instant a budget-bound prune
// takes first.
func (m *capModel) ledgerID(scope, key string) string {
	if m.tenantKeyed {
		return fmt.Sprintf("t|%d:%s|%d:%s", len(scope), scope, len(key), key)
	}
	return fmt.Sprintf("0:|%d:%s|%d:%s", len(scope), scope, len(key), key)
}

// scope is the idempotency scope the service sends for op in (graph,
// tenant).
func (m *capModel) scope(op, tenant, graph string) string {
	if m.tenantKeyed {
		return capTenantScope(op, tenant, graph)
	}
	return capGraphScope(op, tenant, graph)
}

func (m *capModel) record(scope, key, fingerprint string, result any) {
	m.ledger[m.ledgerKey(scope, key)] = &mIdem{fingerprint: fingerprint, created: m.now, id: m.ledgerID(scope, key), result: result}
}

// end terminalizes an active lease and returns its usage to the cell.
func (m *capModel) end(l *capacity.Lease, state string) {
	c := m.cells[mKey{l.GraphRef, l.TenantRef, l.CellID}]
	c.used[l.ResourceClass] -= l.Amount
	if c.used[l.ResourceClass] == 0 {
		delete(c.used, l.ResourceClass)
	}
	l.State, l.EndedAtMs = state, m.now
	m.ended[leaseIdentity(l)] = true
}

// due lists the active leases whose deadline has passed, of one graph of
// one tenant or of all (all true), in expiry index order.
func (m *capModel) due(graph, tenant string, all bool) []*capacity.Lease {
	var out []*capacity.Lease
	for _, l := range m.leases {
		if l.State == capacity.LeaseActive && l.ExpiresAtMs <= m.now && (all || l.GraphRef == graph && l.TenantRef == tenant) {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ExpiresAtMs != b.ExpiresAtMs {
			return a.ExpiresAtMs < b.ExpiresAtMs
		}
		if a.GraphRef != b.GraphRef {
			return a.GraphRef < b.GraphRef
		}
		if a.TenantRef != b.TenantRef {
			return a.TenantRef < b.TenantRef
		}
		return a.LeaseID < b.LeaseID
	})
	return out
}

// scanPos is a position in a tenant's expiry index: a reclaim cursor.
type scanPos struct {
	at int64
	id string
}

func (p scanPos) less(q scanPos) bool { return p.at < q.at || p.at == q.at && p.id < q.id }

// reclaim is ReclaimExpiredCapacity (and the page an acquire reclaims
// first): it walks the expired leases of a graph of the tenant after the
// cursor, takes those of the cell, at most max, and examines at most 8
// pages' worth of rows. next is the cursor to go on from, nil when the
// walk reached the end.
func (m *capModel) reclaim(graph, tenant, cell string, max int, after *scanPos) (ids []string, next *scanPos) {
	const maxScan = 8 * capacity.MaxRowsPerPage
	var due []*capacity.Lease
	var last *scanPos
	scanned, early := 0, false
	for _, l := range m.due(graph, tenant, false) {
		p := scanPos{l.ExpiresAtMs, l.LeaseID}
		if after != nil && !after.less(p) {
			continue
		}
		if len(due) == max || scanned == maxScan {
			early = true
			break
		}
		scanned++
		last = &p
		if cell == "" || l.CellID == cell {
			due = append(due, l)
		}
	}
	if !early {
		last = nil
	}
	for _, l := range due {
		m.end(l, capacity.LeaseExpired)
		ids = append(ids, l.LeaseID)
	}
	return ids, last
}

// status is the model's CellStatus of a cell.
func (m *capModel) status(graph, tenant, cell string) capacity.CellStatus {
	c := m.cells[mKey{graph, tenant, cell}]
	if c == nil {
		c = &mCell{}
	}
	st := capacity.CellStatus{TenantRef: tenant, GraphRef: graph, CellID: cell, Epoch: c.epoch, LastFence: c.lastFence, UpdatedAtMs: c.updatedAt, Classes: []capacity.Available{}}
	names := map[string]bool{}
	for k := range c.caps {
		names[k] = true
	}
	for k := range c.used {
		names[k] = true
	}
	for _, k := range sortedKeys(names) {
		st.Classes = append(st.Classes, m.available(graph, tenant, cell, k))
	}
	return st
}

func (m *capModel) available(graph, tenant, cell, class string) capacity.Available {
	c := m.cells[mKey{graph, tenant, cell}]
	capacity_, used := c.caps[class], c.used[class]
	return capacity.Available{CellID: cell, ResourceClass: class, Capacity: capacity_, Used: used, Free: capacity_ - min(used, capacity_), Epoch: c.epoch}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// cellsOf lists the cells of a graph of a tenant in id order.
func (m *capModel) cellsOf(graph, tenant string) []string {
	var out []string
	for k := range m.cells {
		if k.graph == graph && k.tenant == tenant {
			out = append(out, k.id)
		}
	}
	sort.Strings(out)
	return out
}

// leasesOf lists the stored leases of a graph of a tenant (of one cell, or
// all) in id order.
func (m *capModel) leasesOf(graph, tenant, cell string) []*capacity.Lease {
	var out []*capacity.Lease
	for _, l := range m.leases {
		if l.GraphRef == graph && l.TenantRef == tenant && (cell == "" || l.CellID == cell) {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LeaseID < out[j].LeaseID })
	return out
}

// updateCell is UpdateCapacityCell: the decision and the cell it reports.
func (m *capModel) updateCell(graph, tenant, cell string, caps map[string]uint64, expected *uint64) (capacity.Decision, capacity.CellStatus) {
	m.stamp()
	c := m.cells[mKey{graph, tenant, cell}]
	if expected != nil && *expected != epochOf(c) {
		return capacity.StaleEpoch, m.status(graph, tenant, cell)
	}
	if c != nil {
		for class, used := range c.used {
			if caps[class] < used {
				return capacity.Invalid, m.status(graph, tenant, cell)
			}
		}
	}
	if c == nil {
		c = &mCell{used: map[string]uint64{}}
		m.cells[mKey{graph, tenant, cell}] = c
	}
	c.caps = map[string]uint64{}
	for k, v := range caps {
		c.caps[k] = v
	}
	c.epoch++
	c.updatedAt = m.now
	return capacity.Granted, m.status(graph, tenant, cell)
}

func epochOf(c *mCell) uint64 {
	if c == nil {
		return 0
	}
	return c.epoch
}

// acqOutcome is what the model predicts of one acquire.
type acqOutcome struct {
	code      errs.Code               // an error without a result ("" if none)
	replay    *capacity.AcquireResult // the stored result a replay returns
	decision  capacity.Decision
	leases    []capacity.Lease // granted, without their FSM-named ids
	available []capacity.Available
	reclaimed int // leases the acquire expired before deciding
}

// acquire is AcquireCapacity. Granted leases enter the model only once
// their ids are known (addLeases).
//
// base is the lowest fence the acquire may issue: 0 where fences count up
// per cell (capacity_acquire version 1), the command's log index times 16
// where they derive from it (version 2 enabled).
func (m *capModel) acquire(req capacity.AcquireRequest, base uint64) acqOutcome {
	// Lease ids starting with "lease-" are the FSM's to give: the service
	// refuses a caller's before proposing anything.
	if strings.HasPrefix(req.LeaseID, "lease-") {
		return acqOutcome{code: errs.CodeInvalid}
	}
	m.stamp()
	g := mGraph(req.GraphRef)
	scope := m.scope("acquire", req.TenantRef, g)
	if e := m.ledger[m.ledgerKey(scope, req.IdempotencyKey)]; e != nil {
		if e.fingerprint != acquireFingerprint(req) {
			return acqOutcome{code: errs.CodeIdempotencyConflict}
		}
		return acqOutcome{replay: e.result.(*capacity.AcquireResult)}
	}
	if req.LeaseID != "" && m.leases[mKey{g, req.TenantRef, req.LeaseID}] != nil {
		return acqOutcome{code: errs.CodeConflict}
	}
	ids, _ := m.reclaim(g, req.TenantRef, "", capacity.MaxRowsPerPage, nil)
	out := acqOutcome{reclaimed: len(ids)}
	type ck struct{ cell, class string }
	want := map[ck]uint64{}
	var keys []ck
	for _, d := range req.Demands {
		c := m.cells[mKey{g, req.TenantRef, d.CellID}]
		if c == nil {
			out.decision = capacity.Invalid
			return out
		}
		if d.ExpectedEpoch != nil && *d.ExpectedEpoch != c.epoch {
			out.decision = capacity.StaleEpoch
			return out
		}
		k := ck{d.CellID, d.ResourceClass}
		if _, seen := want[k]; !seen {
			keys = append(keys, k)
		}
		want[k] += d.Amount
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].cell < keys[j].cell || keys[i].cell == keys[j].cell && keys[i].class < keys[j].class
	})
	availability := func() []capacity.Available {
		var av []capacity.Available
		for _, k := range keys {
			av = append(av, m.available(g, req.TenantRef, k.cell, k.class))
		}
		return av
	}
	out.available = availability()
	for _, a := range out.available {
		if want[ck{a.CellID, a.ResourceClass}] > a.Free {
			out.decision = capacity.Exhausted
			return out
		}
	}
	for _, d := range req.Demands {
		c := m.cells[mKey{g, req.TenantRef, d.CellID}]
		c.lastFence = max(c.lastFence+1, base)
		c.used[d.ResourceClass] += d.Amount
		out.leases = append(out.leases, capacity.Lease{
			TenantRef: req.TenantRef, GraphRef: g, CellID: d.CellID, ResourceClass: d.ResourceClass, Amount: d.Amount,
			OwnerDigest: req.OwnerDigest, WorkItemID: req.WorkItemID, Priority: req.Priority,
			LeaseEpoch: 1, Fence: c.lastFence, CellEpoch: c.epoch, State: capacity.LeaseActive,
			AcquiredAtMs: m.now, ExpiresAtMs: m.now + req.TTLMs, TTLMs: req.TTLMs,
			CostBudgetMicros: req.CostBudgetMicros, TokenBudget: req.TokenBudget,
		})
	}
	out.decision = capacity.Granted
	out.available = availability()
	return out
}

// addLeases enters granted leases under the ids the FSM gave them. It
// reports an id that already names a stored lease: a grant must never
// overwrite one.
func (m *capModel) addLeases(leases []capacity.Lease) error {
	for i := range leases {
		l := leases[i]
		k := mKey{l.GraphRef, l.TenantRef, l.LeaseID}
		if old := m.leases[k]; old != nil {
			return fmt.Errorf("granted lease %s reuses the id of stored lease %s (%s on %s, fence %d)", l.LeaseID, old.LeaseID, old.State, old.CellID, old.Fence)
		}
		m.leases[k] = &l
		ck := mKey{l.GraphRef, l.TenantRef, l.CellID}
		if l.Fence <= m.topFence[ck] {
			return fmt.Errorf("lease %s on %s granted fence %d, not above %d granted before", l.LeaseID, l.CellID, l.Fence, m.topFence[ck])
		}
		m.topFence[ck] = l.Fence
	}
	return nil
}

// acquireFingerprint stands for the request digest: the request without
// its transport fields, its graph as the FSM keys it.
func acquireFingerprint(r capacity.AcquireRequest) string {
	r.IdempotencyKey, r.NowMs, r.SchemaVersion, r.GraphRef = "", 0, "", mGraph(r.GraphRef)
	b, _ := json.Marshal(r)
	return string(b)
}

// leasesOutcome is what the model predicts of one renew or release.
type leasesOutcome struct {
	code     errs.Code
	replay   *capacity.LeasesResult
	decision capacity.Decision
	leases   []capacity.Lease
}

// leasesCall is RenewCapacity (renew true) or ReleaseCapacity.
func (m *capModel) leasesCall(renew bool, req capacity.LeasesRequest) leasesOutcome {
	m.stamp()
	g := mGraph(req.GraphRef)
	scope := m.leasesScope(renew, req)
	if req.IdempotencyKey != "" {
		if e := m.ledger[m.ledgerKey(scope, req.IdempotencyKey)]; e != nil {
			if e.fingerprint != leasesFingerprint(req) {
				return leasesOutcome{code: errs.CodeIdempotencyConflict}
			}
			return leasesOutcome{replay: e.result.(*capacity.LeasesResult)}
		}
	}
	var found []*capacity.Lease
	for _, ref := range req.Leases {
		l := m.leases[mKey{g, req.TenantRef, ref.LeaseID}]
		var d capacity.Decision
		switch {
		case l == nil:
			d = capacity.Invalid
		case l.OwnerDigest != req.OwnerDigest:
			d = capacity.StaleFence
		case l.State == capacity.LeaseExpired || l.State == capacity.LeaseActive && m.now >= l.ExpiresAtMs:
			d = capacity.Expired
		case l.State != capacity.LeaseActive, l.Fence != ref.Fence:
			d = capacity.StaleFence
		case l.LeaseEpoch != ref.LeaseEpoch:
			d = capacity.StaleEpoch
		}
		if d != "" {
			return leasesOutcome{decision: d}
		}
		found = append(found, l)
	}
	out := leasesOutcome{decision: capacity.Granted}
	for _, l := range found {
		if renew {
			ttl := req.TTLMs
			if ttl == 0 {
				ttl = l.TTLMs
			}
			l.LeaseEpoch++
			l.Renewals++
			l.ExpiresAtMs = m.now + ttl
		} else {
			m.end(l, capacity.LeaseReleased)
		}
		out.leases = append(out.leases, *l)
	}
	return out
}

// leasesScope is the idempotency scope of a renew (or release) request.
func (m *capModel) leasesScope(renew bool, r capacity.LeasesRequest) string {
	if renew {
		return m.scope("renew", r.TenantRef, mGraph(r.GraphRef))
	}
	return m.scope("release", r.TenantRef, mGraph(r.GraphRef))
}

func leasesFingerprint(r capacity.LeasesRequest) string {
	r.IdempotencyKey, r.NowMs, r.SchemaVersion, r.GraphRef = "", 0, "", mGraph(r.GraphRef)
	b, _ := json.Marshal(r)
	return string(b)
}

// tick is a Tick: the ledger, then leases, each bounded by budget. It
// returns how many ledger rows it pruned.
func (m *capModel) tick(budget int, retentionMs int64) int {
	m.stamp()
	type row struct {
		key string
		e   *mIdem
	}
	var old []row
	for k, e := range m.ledger {
		if e.created <= m.now-retentionMs {
			old = append(old, row{k, e})
		}
	}
	sort.Slice(old, func(i, j int) bool {
		return old[i].e.created < old[j].e.created || old[i].e.created == old[j].e.created && old[i].e.id < old[j].e.id
	})
	pruned := min(budget, len(old))
	for _, r := range old[:pruned] {
		delete(m.ledger, r.key)
	}
	due := m.due("", "", true)
	for _, l := range due[:min(budget, len(due))] {
		m.end(l, capacity.LeaseExpired)
	}
	var gone []*capacity.Lease
	for _, l := range m.leases {
		if l.State != capacity.LeaseActive && l.EndedAtMs <= m.now-capacity.EndedLeaseRetention.Milliseconds() {
			gone = append(gone, l)
		}
	}
	sort.Slice(gone, func(i, j int) bool {
		a, b := gone[i], gone[j]
		if a.EndedAtMs != b.EndedAtMs {
			return a.EndedAtMs < b.EndedAtMs
		}
		if a.GraphRef != b.GraphRef {
			return a.GraphRef < b.GraphRef
		}
		if a.TenantRef != b.TenantRef {
			return a.TenantRef < b.TenantRef
		}
		return a.LeaseID < b.LeaseID
	})
	for _, l := range gone[:min(budget, len(gone))] {
		delete(m.leases, mKey{l.GraphRef, l.TenantRef, l.LeaseID})
	}
	return pruned
}

// compareStored lists every difference between the model and the stored
// tables, and every lease that came back to life after it ended.
func (m *capModel) compareStored(st storedState) []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	nonzero := func(in map[string]uint64) map[string]uint64 {
		out := map[string]uint64{}
		for k, v := range in {
			if v != 0 {
				out[k] = v
			}
		}
		return out
	}
	if len(st.Cells) != len(m.cells) {
		badf("%d cells stored, the model has %d", len(st.Cells), len(m.cells))
	}
	for _, c := range st.Cells {
		mc := m.cells[mKey{c.GraphRef, c.TenantRef, c.CellID}]
		if mc == nil {
			badf("stored cell %q/%s/%s is not in the model", c.GraphRef, c.TenantRef, c.CellID)
			continue
		}
		caps := c.Capacity
		if caps == nil {
			caps = map[string]uint64{}
		}
		if c.Epoch != mc.epoch || c.LastFence != mc.lastFence || c.UpdatedAtMs != mc.updatedAt ||
			!cmp.Equal(caps, mc.caps) || !cmp.Equal(nonzero(c.Used), nonzero(mc.used)) {
			badf("cell %q/%s/%s stored as epoch %d fence %d updated %d caps %v used %v; the model has epoch %d fence %d updated %d caps %v used %v",
				c.GraphRef, c.TenantRef, c.CellID, c.Epoch, c.LastFence, c.UpdatedAtMs, caps, c.Used, mc.epoch, mc.lastFence, mc.updatedAt, mc.caps, mc.used)
		}
	}
	if len(st.Leases) != len(m.leases) {
		badf("%d leases stored, the model has %d", len(st.Leases), len(m.leases))
	}
	for i := range st.Leases {
		l := &st.Leases[i]
		if l.State == capacity.LeaseActive && m.ended[leaseIdentity(l)] {
			badf("lease %s came back to life after it ended", leaseIdentity(l))
		}
		ml := m.leases[mKey{l.GraphRef, l.TenantRef, l.LeaseID}]
		if ml == nil {
			badf("stored lease %q/%s/%s is not in the model", l.GraphRef, l.TenantRef, l.LeaseID)
			continue
		}
		if d := cmp.Diff(*ml, *l); d != "" {
			badf("lease %q/%s/%s (-model +stored):\n%s", l.GraphRef, l.TenantRef, l.LeaseID, d)
		}
	}
	return bad
}

// The state machine test. Small pools make collisions frequent: tenant u
// has a cell c9 that never exists; class cpu is in no cell at first.
var (
	mTenants  = []string{"t", "t", "t", "t", "u"}
	mCellsOf  = map[string][]string{"t": {"c1", "c2", "c3"}, "u": {"c1", "c9"}}
	mClasses  = []string{"cpu", "gpu", "mem"}
	mOwners   = []string{"owner-a", "owner-b"}
	mTTLs     = []int64{1, 500, 1000, 5000, 60_000}
	mAdvances = []time.Duration{time.Millisecond, 250 * time.Millisecond, 999 * time.Millisecond, time.Second,
		5 * time.Second, 61 * time.Second, 2 * time.Hour}
	// Absurd request clocks: the FSM must ignore them.
	mNowMs = []int64{0, 1, -1 << 40, 1 << 62, fsmtest.Epoch + 10*time.Hour.Milliseconds()}
	// Graphs a request names: the default one (by both names) and g2,
	// whose cells of tenant t have the default graph's ids.
	mGraphs = []string{"", "", capacity.DefaultGraph, "g2"}
)

type capMachine struct {
	ctx  context.Context
	l    *fsmtest.Local
	svc  *capacity.Service
	m    *capModel
	keys int // fresh idempotency keys handed out
	// gated: the cluster's capabilities are enabled (acquire version 3,
	// the other commands version 2): fences derive from the log index and
	// requests may name graphs. Ungated, a graph other than the default
	// one is refused.
	gated bool
	// last is the stored state after the last step (check reads it);
	// frozenBy names a step that must not have changed the capacity
	// tables from frozen.
	last     storedState
	frozen   [32]byte
	frozenBy string
	// Requests sent under each idempotency key, for replays and misuse.
	acquires  []capacity.AcquireRequest
	leaseReqs []keyedLeases
}

type keyedLeases struct {
	renew bool
	req   capacity.LeasesRequest
}

func newCapMachine(t *rapid.T) *capMachine {
	l, err := fsmtest.New(capacity.Module())
	if err != nil {
		t.Fatal(err)
	}
	mc := &capMachine{ctx: context.Background(), l: l, svc: capacity.NewService(l, l), m: newCapModel(fsmtest.Epoch)}
	// Half the runs enable what the binary serves first: acquire then
	// derives fences from the log index, and graphs are served.
	if mc.gated = rapid.Bool().Draw(t, "gated"); mc.gated {
		res, err := l.Propose(mc.ctx, log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(fsm.ServedBy(capacity.Module()))})
		if err != nil || res.Err != nil {
			t.Fatalf("enable: %v %v", err, res.Err)
		}
		mc.m.stamp()
		mc.m.tenantKeyed = true
	}
	mc.check(t)
	mc.update(t, "", "t", "c1", map[string]uint64{"gpu": 8, "mem": 16}, nil)
	mc.check(t)
	mc.update(t, "", "t", "c2", map[string]uint64{"gpu": 4}, nil)
	mc.check(t)
	mc.update(t, "", "u", "c1", map[string]uint64{"gpu": 4}, nil)
	mc.check(t)
	if mc.gated {
		mc.update(t, "g2", "t", "c1", map[string]uint64{"gpu": 2, "mem": 16}, nil)
		mc.check(t)
	}
	return mc
}

// graph draws the graph of a request.
func (mc *capMachine) graph(t *rapid.T) string { return rapid.SampledFrom(mGraphs).Draw(t, "graph") }

// refused reports whether a command in graph must be refused: a graph
// other than the default one while the state enables no graphs.
func (mc *capMachine) refused(graph string) bool { return !mc.gated && mGraph(graph) != "" }

// refuseGraph requires call, a command in a graph this state does not
// serve, to fail unavailable without changing the capacity tables (FSM
// time moves: the command was applied).
func (mc *capMachine) refuseGraph(t *rapid.T, what string, call func() (any, error)) {
	t.Helper()
	before := mc.last
	mc.m.stamp()
	res, err := call()
	if errs.CodeOf(err) != errs.CodeUnavailable || !isNil(res) {
		t.Fatalf("%s in a graph while graphs are not enabled: %+v %v, want unavailable", what, res, err)
	}
	mc.unchanged(t, before, what+" in a graph not enabled")
}

func (mc *capMachine) freshKey() string {
	mc.keys++
	return fmt.Sprintf("k%d", mc.keys)
}

// unchanged records that the step must leave the capacity tables as
// before is; check verifies it on the state it reads anyway.
func (mc *capMachine) unchanged(_ *rapid.T, before storedState, what string) {
	mc.frozen, mc.frozenBy = before.capacityDigest(), what
}

func (mc *capMachine) update(t *rapid.T, graph, tenant, cell string, caps map[string]uint64, expected *uint64) {
	t.Helper()
	req := capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: tenant, GraphRef: graph,
		Cell: capacity.CellSpec{CellID: cell, Capacities: caps}, ExpectedEpoch: expected, NowMs: 7}
	if rapid.IntRange(0, 3).Draw(t, "no_schema") == 0 {
		req.SchemaVersion = "" // the Go API speaks SchemaVersion
	}
	if mc.refused(graph) {
		mc.refuseGraph(t, "update", func() (any, error) { return mc.svc.UpdateCell(mc.ctx, req) })
		return
	}
	before := mc.last
	d, want := mc.m.updateCell(mGraph(graph), tenant, cell, caps, expected)
	res, err := mc.svc.UpdateCell(mc.ctx, req)
	if res == nil {
		t.Fatalf("update %s/%s: %v", tenant, cell, err)
	}
	if res.Decision != d || res.NowMs != mc.m.now {
		t.Fatalf("update %s/%s %v (expected epoch %v): %s at %d, the model says %s at %d", tenant, cell, caps, expected, res.Decision, res.NowMs, d, mc.m.now)
	}
	if e := wantDecisionErr(res.Decision, err); e != nil {
		t.Fatalf("update %s/%s: %v", tenant, cell, e)
	}
	if diff := cmp.Diff(want, res.Cell); diff != "" {
		t.Fatalf("update %s/%s reports the cell (-model +got):\n%s", tenant, cell, diff)
	}
	if d != capacity.Granted {
		mc.unchanged(t, before, "a denied update")
	}
}

func (mc *capMachine) updateCell(t *rapid.T) {
	graph := mc.graph(t)
	tenant := rapid.SampledFrom(mTenants).Draw(t, "tenant")
	cell := rapid.SampledFrom(mCellsOf[tenant]).Draw(t, "cell")
	caps := map[string]uint64{}
	for _, class := range mClasses {
		if rapid.IntRange(0, 3).Draw(t, "has_"+class) > 0 {
			caps[class] = uint64(rapid.IntRange(0, 12).Draw(t, "cap_"+class))
		}
	}
	mc.update(t, graph, tenant, cell, caps, mc.expectedEpoch(t, graph, tenant, cell))
}

// expectedEpoch is no guard, the right epoch or a wrong one.
func (mc *capMachine) expectedEpoch(t *rapid.T, graph, tenant, cell string) *uint64 {
	e := epochOf(mc.m.cells[mKey{mGraph(graph), tenant, cell}])
	switch rapid.IntRange(0, 9).Draw(t, "expected_epoch") {
	case 0:
		return &e
	case 1:
		e++
		return &e
	case 2:
		if e > 0 {
			e--
			return &e
		}
	}
	return nil
}

func (mc *capMachine) newAcquire(t *rapid.T, graph, tenant, key string) capacity.AcquireRequest {
	req := capacity.AcquireRequest{SchemaVersion: "1", TenantRef: tenant, GraphRef: graph, IdempotencyKey: key,
		WorkItemID:  rapid.SampledFrom([]string{"w1", "w2"}).Draw(t, "work_item"),
		OwnerDigest: rapid.SampledFrom(mOwners).Draw(t, "owner"),
		Priority:    int32(rapid.IntRange(-2, 2).Draw(t, "priority")),
		TTLMs:       rapid.SampledFrom(mTTLs).Draw(t, "ttl"),
		NowMs:       rapid.SampledFrom(mNowMs).Draw(t, "now_ms"),
	}
	for i, n := 0, rapid.IntRange(1, 4).Draw(t, "demands"); i < n; i++ {
		d := capacity.Demand{CellID: rapid.SampledFrom(mCellsOf[tenant]).Draw(t, "cell"),
			ResourceClass: rapid.SampledFrom(mClasses).Draw(t, "class"),
			Amount:        uint64(rapid.IntRange(1, 6).Draw(t, "amount"))}
		d.ExpectedEpoch = mc.expectedEpoch(t, graph, tenant, d.CellID)
		req.Demands = append(req.Demands, d)
	}
	if rapid.IntRange(0, 5).Draw(t, "budgets") == 0 {
		cost, tokens := rapid.Int64Range(0, capacity.MaxBudget).Draw(t, "cost"), rapid.Int64Range(0, 9).Draw(t, "tokens")
		req.CostBudgetMicros, req.TokenBudget = &cost, &tokens
	}
	if len(req.Demands) == 1 && rapid.IntRange(0, 3).Draw(t, "named") == 0 {
		// A caller may name its lease. Some names are what the FSM would
		// call a lease granted a few entries later.
		next := len(mc.l.Log()) + 1
		soon := fmt.Sprintf("lease-%d-0", next+1)
		req.LeaseID = rapid.SampledFrom([]string{"L1", "L2", soon, soon, soon,
			fmt.Sprintf("lease-%d-0", next+2), fmt.Sprintf("lease-%d-1", next+1)}).Draw(t, "lease_id")
	}
	return req
}

func (mc *capMachine) acquire(t *rapid.T) {
	var req capacity.AcquireRequest
	switch p := rapid.IntRange(0, 9).Draw(t, "key_use"); {
	case p == 0 && len(mc.acquires) > 0: // a retry: same request, same key
		req = rapid.SampledFrom(mc.acquires).Draw(t, "retry")
		req.NowMs = rapid.SampledFrom(mNowMs).Draw(t, "now_ms")
	case p == 1 && len(mc.acquires) > 0: // another request under a used key, in the same graph or another
		old := rapid.SampledFrom(mc.acquires).Draw(t, "reuse")
		req = mc.newAcquire(t, mc.graph(t), old.TenantRef, old.IdempotencyKey)
	default:
		req = mc.newAcquire(t, mc.graph(t), rapid.SampledFrom(mTenants).Draw(t, "tenant"), mc.freshKey())
	}
	if mc.refused(req.GraphRef) && !strings.HasPrefix(req.LeaseID, "lease-") { // the service refuses such a lease id itself
		mc.refuseGraph(t, "acquire", func() (any, error) { return mc.svc.Acquire(mc.ctx, req) })
		return
	}
	before := mc.last
	var base uint64
	if mc.gated {
		base = uint64(len(mc.l.Log())+1) * capacity.MaxDemands
	}
	want := mc.m.acquire(req, base)
	res, err := mc.svc.Acquire(mc.ctx, req)
	what := fmt.Sprintf("acquire %s", acquireFingerprint(req))
	switch {
	case want.code != "":
		if res != nil || errs.CodeOf(err) != want.code {
			t.Fatalf("%s: %+v %v, want error %s", what, res, err, want.code)
		}
		mc.unchanged(t, before, "a failed acquire")
		return
	case res == nil:
		t.Fatalf("%s: no result: %v", what, err)
	case want.replay != nil:
		if !res.Replayed {
			t.Fatalf("%s: a retry under key %s was not replayed", what, req.IdempotencyKey)
		}
		got := *res
		got.Replayed = false
		if diff := cmp.Diff(*want.replay, got); diff != "" {
			t.Fatalf("%s: replay differs from the first result (-first +replay):\n%s", what, diff)
		}
		if e := wantDecisionErr(res.Decision, err); e != nil {
			t.Fatalf("%s (replay): %v", what, e)
		}
		mc.unchanged(t, before, "a replayed acquire")
		return
	}
	if res.Replayed || res.Decision != want.decision || res.NowMs != mc.m.now {
		t.Fatalf("%s: %s at %d (replayed %t; %s), the model says %s at %d", what, res.Decision, res.NowMs, res.Replayed, res.Message, want.decision, mc.m.now)
	}
	if e := wantDecisionErr(res.Decision, err); e != nil {
		t.Fatalf("%s: %v", what, e)
	}
	if res.Decision == capacity.Granted || res.Decision == capacity.Exhausted {
		if diff := cmp.Diff(want.available, res.Available); diff != "" {
			t.Fatalf("%s: available (-model +got):\n%s", what, diff)
		}
	}
	if len(res.Leases) != len(want.leases) {
		t.Fatalf("%s: %d leases, the model grants %d", what, len(res.Leases), len(want.leases))
	}
	for i := range res.Leases {
		w := want.leases[i]
		w.LeaseID = res.Leases[i].LeaseID
		if req.LeaseID != "" && w.LeaseID != req.LeaseID {
			t.Fatalf("%s: lease named %q, not %q", what, w.LeaseID, req.LeaseID)
		}
		if diff := cmp.Diff(w, res.Leases[i]); diff != "" {
			t.Fatalf("%s: lease %d (-model +got):\n%s", what, i, diff)
		}
	}
	if err := mc.m.addLeases(res.Leases); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if res.Decision != capacity.Granted && want.reclaimed == 0 {
		mc.unchanged(t, before, "a denied acquire that had nothing to reclaim")
	}
	// Only a grant is kept for replay: a retry of a denial asks again.
	if res.Decision == capacity.Granted {
		first := *res
		mc.m.record(mc.m.scope("acquire", req.TenantRef, mGraph(req.GraphRef)), req.IdempotencyKey, acquireFingerprint(req), &first)
	}
	mc.acquires = append(mc.acquires, req)
}

func (mc *capMachine) newLeases(t *rapid.T, graph, tenant, key string) capacity.LeasesRequest {
	req := capacity.LeasesRequest{SchemaVersion: "1", TenantRef: tenant, GraphRef: graph, IdempotencyKey: key,
		NowMs: rapid.SampledFrom(mNowMs).Draw(t, "now_ms")}
	// Mostly leases of the request's graph; now and then those of another,
	// which are no leases of this one.
	from := mGraph(graph)
	if rapid.IntRange(0, 9).Draw(t, "other_graph") == 0 {
		from = mGraph(mc.graph(t))
	}
	stored := mc.m.leasesOf(from, tenant, "")
	seen := map[string]bool{}
	var owner string
	for i, n := 0, rapid.IntRange(1, 4).Draw(t, "leases"); i < n; i++ {
		ref := capacity.LeaseRef{LeaseID: "ghost", LeaseEpoch: 1, Fence: 1}
		if len(stored) > 0 && rapid.IntRange(0, 9).Draw(t, "ghost") > 0 {
			l := rapid.SampledFrom(stored).Draw(t, "lease")
			ref = capacity.LeaseRef{LeaseID: l.LeaseID, LeaseEpoch: l.LeaseEpoch, Fence: l.Fence}
			if owner == "" {
				owner = l.OwnerDigest
			}
		}
		if !seen[ref.LeaseID] {
			seen[ref.LeaseID] = true
			req.Leases = append(req.Leases, ref)
		}
	}
	if owner == "" || rapid.IntRange(0, 9).Draw(t, "other_owner") == 0 {
		owner = rapid.SampledFrom(mOwners).Draw(t, "owner")
	}
	req.OwnerDigest = owner
	// Now and then one token of the batch is stale.
	i := rapid.IntRange(0, len(req.Leases)-1).Draw(t, "spoiled")
	switch rapid.IntRange(0, 7).Draw(t, "spoil") {
	case 0:
		req.Leases[i].Fence++
	case 1:
		req.Leases[i].Fence--
	case 2:
		req.Leases[i].LeaseEpoch++
	case 3:
		req.Leases[i].LeaseEpoch--
	}
	if rapid.Bool().Draw(t, "renew_ttl") {
		req.TTLMs = rapid.SampledFrom(mTTLs).Draw(t, "ttl")
	}
	return req
}

func (mc *capMachine) leases(t *rapid.T, renew bool) {
	var req capacity.LeasesRequest
	switch p := rapid.IntRange(0, 9).Draw(t, "key_use"); {
	case p == 0 && len(mc.leaseReqs) > 0:
		old := rapid.SampledFrom(mc.leaseReqs).Draw(t, "retry")
		req, renew = old.req, old.renew
	case p == 1 && len(mc.leaseReqs) > 0:
		old := rapid.SampledFrom(mc.leaseReqs).Draw(t, "reuse")
		req, renew = mc.newLeases(t, mc.graph(t), old.req.TenantRef, old.req.IdempotencyKey), old.renew
	case p < 4:
		req = mc.newLeases(t, mc.graph(t), rapid.SampledFrom(mTenants).Draw(t, "tenant"), mc.freshKey())
	default:
		req = mc.newLeases(t, mc.graph(t), rapid.SampledFrom(mTenants).Draw(t, "tenant"), "")
	}
	call, what := mc.svc.Release, "release"
	if renew {
		call, what = mc.svc.Renew, "renew"
	}
	if mc.refused(req.GraphRef) {
		mc.refuseGraph(t, what, func() (any, error) { return call(mc.ctx, req) })
		return
	}
	what = fmt.Sprintf("%s %s key %q", what, leasesFingerprint(req), req.IdempotencyKey)
	before := mc.last
	want := mc.m.leasesCall(renew, req)
	res, err := call(mc.ctx, req)
	switch {
	case want.code != "":
		if res != nil || errs.CodeOf(err) != want.code {
			t.Fatalf("%s: %+v %v, want error %s", what, res, err, want.code)
		}
		mc.unchanged(t, before, "a failed "+what)
		return
	case res == nil:
		t.Fatalf("%s: no result: %v", what, err)
	case want.replay != nil:
		got := *res
		got.Replayed = false
		if diff := cmp.Diff(*want.replay, got); !res.Replayed || diff != "" {
			t.Fatalf("%s: replayed %t, differs from the first result (-first +replay):\n%s", what, res.Replayed, diff)
		}
		mc.unchanged(t, before, "a replayed "+what)
		return
	}
	if res.Replayed || res.Decision != want.decision || res.NowMs != mc.m.now {
		t.Fatalf("%s: %s at %d (%s), the model says %s at %d", what, res.Decision, res.NowMs, res.Message, want.decision, mc.m.now)
	}
	if e := wantDecisionErr(res.Decision, err); e != nil {
		t.Fatalf("%s: %v", what, e)
	}
	if diff := cmp.Diff(want.leases, res.Leases, cmp.Comparer(func(a, b []capacity.Lease) bool {
		return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b)
	})); len(want.leases)+len(res.Leases) > 0 && diff != "" {
		t.Fatalf("%s: leases (-model +got):\n%s", what, diff)
	}
	if res.Decision != capacity.Granted {
		// One bad token in a batch of good ones: nothing changes.
		mc.unchanged(t, before, "a refused "+what)
	}
	if req.IdempotencyKey != "" && res.Decision == capacity.Granted {
		first := *res
		mc.m.record(mc.m.leasesScope(renew, req), req.IdempotencyKey, leasesFingerprint(req), &first)
		mc.leaseReqs = append(mc.leaseReqs, keyedLeases{renew: renew, req: req})
	}
}

func (mc *capMachine) reclaim(t *rapid.T) {
	graph := mc.graph(t)
	tenant := rapid.SampledFrom(mTenants).Draw(t, "tenant")
	cell := ""
	if rapid.Bool().Draw(t, "one_cell") {
		cell = rapid.SampledFrom(mCellsOf[tenant]).Draw(t, "cell")
	}
	max := rapid.IntRange(1, 4).Draw(t, "max_count")
	if mc.refused(graph) {
		mc.refuseGraph(t, "reclaim", func() (any, error) {
			return mc.svc.Reclaim(mc.ctx, capacity.ReclaimRequest{TenantRef: tenant, GraphRef: graph, CellID: cell, MaxCount: max})
		})
		return
	}
	var after *scanPos
	cursor := ""
	for page := 0; ; page++ {
		mc.m.stamp()
		ids, next := mc.m.reclaim(mGraph(graph), tenant, cell, max, after)
		res, err := mc.svc.Reclaim(mc.ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: tenant, GraphRef: graph, CellID: cell,
			MaxCount: max, Cursor: cursor, NowMs: rapid.SampledFrom(mNowMs).Draw(t, "now_ms")})
		if err != nil {
			t.Fatalf("reclaim %s/%s page %d: %v", tenant, cell, page, err)
		}
		if ids == nil {
			ids = []string{}
		}
		if res.Decision != capacity.Granted || res.NowMs != mc.m.now || !cmp.Equal(ids, res.ReclaimedLeaseIDs) || (next == nil) != (res.NextCursor == "") {
			t.Fatalf("reclaim %s/%s max %d page %d: %s at %d reclaimed %v, cursor %q; the model reclaims %v at %d, more: %t",
				tenant, cell, max, page, res.Decision, res.NowMs, res.ReclaimedLeaseIDs, res.NextCursor, ids, mc.m.now, next != nil)
		}
		if next == nil {
			return
		}
		after, cursor = next, res.NextCursor
		if page > 100 {
			t.Fatalf("reclaim pages do not end")
		}
	}
}

func (mc *capMachine) advance(t *rapid.T) {
	if rapid.IntRange(0, 9).Draw(t, "clock_back") == 0 {
		// The proposer's clock may go back; the FSM's may not.
		mc.m.clock -= 3000
		mc.l.SetClock(mc.m.clock)
		return
	}
	d := rapid.SampledFrom(mAdvances).Draw(t, "advance")
	mc.m.clock += d.Milliseconds()
	mc.l.Advance(d)
}

func (mc *capMachine) tick(t *rapid.T) {
	tick := fsm.Tick{Budget: rapid.IntRange(1, 4).Draw(t, "budget"), FeedRetain: 64,
		IdemRetentionMs: rapid.SampledFrom([]int64{1000, 1 << 40}).Draw(t, "idem_retention")}
	pruned := mc.m.tick(tick.Budget, tick.IdemRetentionMs)
	res, err := mc.l.Propose(mc.ctx, log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(tick)})
	if err != nil || res.Err != nil {
		t.Fatalf("tick: %v %v", err, res.Err)
	}
	var out fsm.TickResult
	if err := log.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	if out.Now != mc.m.now || out.IdemPruned != pruned {
		t.Fatalf("tick %+v: %+v, the model is at %d and pruned %d ledger rows", tick, out, mc.m.now, pruned)
	}
}

// reads pages through Status and Reconcile of a graph of a tenant with
// small pages and compares what they show with the model. (Reads are not
// commands: a graph not enabled reads as empty, as it is.)
func (mc *capMachine) reads(t *rapid.T) {
	graph := mc.graph(t)
	g := mGraph(graph)
	tenant := rapid.SampledFrom(mTenants).Draw(t, "tenant")
	cell := ""
	if rapid.Bool().Draw(t, "one_cell") {
		cell = rapid.SampledFrom(mCellsOf[tenant]).Draw(t, "cell")
	}
	size := rapid.IntRange(1, 3).Draw(t, "max_count")
	cells, leases, pageCells, err := readAll(mc.ctx, mc.svc, graph, tenant, cell, size)
	if err != nil {
		t.Fatal(err)
	}
	var wantCells []capacity.CellStatus
	for _, c := range mc.m.cellsOf(g, tenant) {
		wantCells = append(wantCells, mc.m.status(g, tenant, c))
	}
	if diff := cmp.Diff(wantCells, cells); diff != "" {
		t.Fatalf("status of %s (-model +got):\n%s", tenant, diff)
	}
	var wantLeases []capacity.Lease
	for _, l := range mc.m.leasesOf(g, tenant, cell) {
		wantLeases = append(wantLeases, *l)
	}
	if diff := cmp.Diff(wantLeases, leases); diff != "" {
		t.Fatalf("reconcile of %s/%s (-model +got):\n%s", tenant, cell, diff)
	}
	for _, c := range pageCells {
		if diff := cmp.Diff(mc.m.status(g, tenant, c.CellID), c); diff != "" {
			t.Fatalf("reconcile of %s shows cell %s (-model +got):\n%s", tenant, c.CellID, diff)
		}
	}
	if len(wantLeases) > 0 {
		l := rapid.SampledFrom(wantLeases).Draw(t, "lookup")
		res, err := mc.svc.Reconcile(mc.ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: tenant, GraphRef: graph, LeaseID: l.LeaseID, MaxCount: 1}, fsm.Linearizable)
		if err != nil || len(res.Leases) != 1 || !cmp.Equal(res.Leases[0], l) || len(res.Cells) != 1 || res.NowMs != mc.m.now {
			t.Fatalf("reconcile of lease %s: %+v %v", l.LeaseID, res, err)
		}
	}
}

// snapshot restores the FSM from its own snapshot, which must give the
// same state.
func (mc *capMachine) snapshot(t *rapid.T) {
	var buf bytes.Buffer
	if err := mc.l.FSM.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	index, hash, err := mc.l.FSM.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.l.FSM.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if i, h, err := mc.l.FSM.StateHash(); err != nil || i != index || h != hash {
		t.Fatalf("restored state %d %x, was %d %x (%v)", i, h, index, hash, err)
	}
}

// check runs after every step: the stored tables keep their invariants
// and are exactly the model's, and FSM time is the model's.
func (mc *capMachine) check(t *rapid.T) {
	t.Helper()
	st := checkStored(t, mc.l.FSM)
	mc.last = st
	if what := mc.frozenBy; what != "" {
		mc.frozenBy = ""
		if st.capacityDigest() != mc.frozen {
			t.Fatalf("%s changed the capacity tables", what)
		}
	}
	if bad := mc.m.compareStored(st); len(bad) > 0 {
		t.Fatalf("stored state differs from the model:\n  %s", joinLines(bad))
	}
	if now := mc.l.FSM.Now(); now != mc.m.now {
		t.Fatalf("FSM time %d, the model's %d", now, mc.m.now)
	}
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// TestCapacityModel drives the service over a bare FSM with random
// commands and the model alongside; after every step the stored tables
// must be the model's and keep every invariant.
func TestCapacityModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mc := newCapMachine(t)
		actions := map[string]func(*rapid.T){
			"acquire":    mc.acquire,
			"renew":      func(t *rapid.T) { mc.leases(t, true) },
			"release":    func(t *rapid.T) { mc.leases(t, false) },
			"updateCell": mc.updateCell,
			"reclaim":    mc.reclaim,
			"advance":    mc.advance,
			"tick":       mc.tick,
			"reads":      mc.reads,
			"snapshot":   mc.snapshot,
		}
		weights := map[string]int{"acquire": 6, "renew": 3, "release": 3, "updateCell": 2, "reclaim": 2, "advance": 4, "tick": 2, "reads": 1, "snapshot": 1}
		var names []string
		for _, name := range sortedKeys(actions) {
			for i := 0; i < weights[name]; i++ {
				names = append(names, name)
			}
		}
		for i, n := 0, rapid.IntRange(1, 100).Draw(t, "steps"); i < n; i++ {
			actions[rapid.SampledFrom(names).Draw(t, "action")](t)
			mc.check(t)
		}
	})
}
