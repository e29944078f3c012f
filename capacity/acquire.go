package capacity

import (
	"fmt"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// acquireCmd is the payload of CmdAcquire before graphs: the request
// without its transport fields (now_ms, idempotency_key), so that a retry
// has the same digest.
type acquireCmd struct {
	TenantRef        string   `msgpack:"tenant_ref"`
	WorkItemID       string   `msgpack:"work_item_id"`
	OwnerDigest      string   `msgpack:"owner_digest"`
	Priority         int32    `msgpack:"priority"`
	Demands          []Demand `msgpack:"demands"`
	LeaseID          string   `msgpack:"lease_id"`
	TTLMs            int64    `msgpack:"ttl_ms"`
	CostBudgetMicros *int64   `msgpack:"cost_budget_micros"`
	TokenBudget      *int64   `msgpack:"token_budget"`
}

// acquireInGraph is the payload of CmdAcquire from version 3 on: it may
// name a graph ("" is the default graph, and leaves the payload as it was).
type acquireInGraph struct {
	acquireCmd
	GraphRef string `msgpack:"graph_ref,omitempty"`
}

// classKey is one (cell, resource class) a command touches.
type classKey struct{ cell, class string }

// acquireCommand is capacity_acquire: a member of the tenant holds
// capacity for the owner digest of its own principal.
func acquireCommand() fsm.Typed[acquireInGraph] {
	t := graphCommand(func(c *acquireInGraph) any { return &c.acquireCmd },
		func(c *acquireInGraph) (string, string) { return c.GraphRef, c.TenantRef }, "acquire")
	t.Validate = (*acquireInGraph).validate
	t.Checks = append(t.Checks, func(_ *fsm.Tx, _ *log.Command, c *acquireInGraph) error { return checkOwnerDigest(c.OwnerDigest) })
	t.Role, t.Tenant = identity.RoleMember, func(c *acquireInGraph) string { return c.TenantRef }
	t.Forbidden = func(p identity.Principal, c *acquireInGraph) error { return mayNotHold(p, c.TenantRef) }
	t.Apply = applyAcquire
	return t
}

// applyAcquire reclaims a bounded page of the expired leases of the
// request's graph and tenant, then grants every demand or none. A denial
// is a result, not an error: the reclaim it did first stays, and nothing
// is charged.
func applyAcquire(tx *fsm.Tx, _ *log.Command, c *acquireInGraph) (any, error) {
	if err := checkOwner(tx.Principal, c.OwnerDigest); err != nil {
		return nil, err
	}
	if c.LeaseID != "" {
		if l, err := getLease(tx, c.GraphRef, c.TenantRef, c.LeaseID); err != nil {
			return nil, err
		} else if l != nil {
			return nil, errs.Errorf(errs.CodeConflict, "lease %q exists", c.LeaseID)
		}
	}
	if _, _, err := reclaimTenant(tx, c.GraphRef, c.TenantRef, "", MaxRowsPerPage, nil); err != nil {
		return nil, err
	}

	res := &AcquireResult{SchemaVersion: SchemaVersion, Leases: []Lease{}, NowMs: tx.Now}
	cells := map[string]*cellRow{}
	want := map[classKey]uint64{}
	var keys []classKey
	for _, d := range c.Demands {
		cell, ok := cells[d.CellID]
		if !ok {
			stored, err := getCell(tx, c.GraphRef, c.TenantRef, d.CellID)
			if err != nil {
				return nil, err
			}
			if stored == nil {
				return deny(tx, res, Invalid, fmt.Sprintf("no cell %q", d.CellID)), nil
			}
			cell = stored.clone()
			cells[d.CellID] = cell
		}
		if d.ExpectedEpoch != nil && *d.ExpectedEpoch != cell.Epoch {
			return deny(tx, res, StaleEpoch, fmt.Sprintf("cell %q is at epoch %d, not %d", d.CellID, cell.Epoch, *d.ExpectedEpoch)), nil
		}
		k := classKey{d.CellID, d.ResourceClass}
		if _, seen := want[k]; !seen {
			keys = append(keys, k)
		}
		want[k] += d.Amount
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].cell < keys[j].cell || keys[i].cell == keys[j].cell && keys[i].class < keys[j].class
	})
	res.Available = available(cells, keys)
	for _, k := range keys {
		cell := cells[k.cell]
		if free := cell.Capacity[k.class] - min(cell.Used[k.class], cell.Capacity[k.class]); want[k] > free {
			return deny(tx, res, Exhausted, fmt.Sprintf("cell %q has %d of %q free, %d asked", k.cell, free, k.class, want[k])), nil
		}
	}
	if activeCount(tx, c.TenantRef)+uint64(len(c.Demands)) > MaxActivePerTenant {
		return deny(tx, res, Backpressure, fmt.Sprintf("tenant holds %d active leases; at most %d", activeCount(tx, c.TenantRef), MaxActivePerTenant)), nil
	}

	base := fenceBase(tx)
	for i, d := range c.Demands {
		cell := cells[d.CellID]
		cell.LastFence = max(cell.LastFence+1, base)
		cell.Used[d.ResourceClass] += d.Amount
		id := c.LeaseID
		if id == "" {
			id = fmt.Sprintf("%s%d-%d", generatedLeasePrefix, tx.Index, i)
		}
		l := &Lease{
			LeaseID: id, TenantRef: c.TenantRef, GraphRef: c.GraphRef, CellID: d.CellID, ResourceClass: d.ResourceClass, Amount: d.Amount,
			OwnerDigest: c.OwnerDigest, WorkItemID: c.WorkItemID, Priority: c.Priority,
			LeaseEpoch: 1, Fence: cell.LastFence, CellEpoch: cell.Epoch, State: LeaseActive,
			AcquiredAtMs: tx.Now, ExpiresAtMs: tx.Now + c.TTLMs, TTLMs: c.TTLMs,
			CostBudgetMicros: c.CostBudgetMicros, TokenBudget: c.TokenBudget,
		}
		if err := grant(tx, l); err != nil {
			return nil, err
		}
		res.Leases = append(res.Leases, *l)
	}
	for _, cell := range sortedCells(cells) {
		if err := tx.Insert(tableCells, cell); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "charge cell: %v", err)
		}
	}
	res.Decision = Granted
	res.Available = available(cells, keys)
	return res, nil
}

// deny is a denial: committed (with the reclaim that preceded it) but not
// kept for replay, so a retry under the same key asks again.
func deny(tx *fsm.Tx, res *AcquireResult, d Decision, msg string) *AcquireResult {
	tx.Refuse()
	res.Decision, res.Message = d, msg
	return res
}

func sortedCells(cells map[string]*cellRow) []*cellRow {
	out := make([]*cellRow, 0, len(cells))
	for _, c := range cells {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CellID < out[j].CellID })
	return out
}

// available reports, for each touched (cell, class), capacity and usage.
func available(cells map[string]*cellRow, keys []classKey) []Available {
	out := make([]Available, 0, len(keys))
	for _, k := range keys {
		c := cells[k.cell]
		out = append(out, availableOf(c, k.class))
	}
	return out
}

func availableOf(c *cellRow, class string) Available {
	capacity, used := c.Capacity[class], c.Used[class]
	return Available{CellID: c.CellID, ResourceClass: class, Capacity: capacity, Used: used, Free: capacity - min(used, capacity), Epoch: c.Epoch}
}

// fenceBase is the lowest fence an acquire may issue. From version 2 of
// capacity_acquire on (once the cluster enables it) fences derive from the
// log index, which never goes backwards, also when a backup is restored
// into the cluster: a restore rolls every cell's LastFence back, and
// counting up from it would hand a new holder a fence an earlier holder
// already had. An acquire issues at most MaxDemands fences per cell, all
// below the next command's base. Version 1 counts up from LastFence, as
// the log it replays was applied.
func fenceBase(tx *fsm.Tx) uint64 {
	if tx.EnabledVersion(CmdAcquire) < 2 {
		return 0
	}
	return tx.Index * fencesPerCommand
}

// fencesPerCommand is room for every fence one acquire issues on a cell:
// one per demand.
const fencesPerCommand = MaxDemands
