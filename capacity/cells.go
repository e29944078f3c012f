package capacity

import (
	"fmt"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// updateCellCmd is the payload of CmdUpdateCell before graphs.
type updateCellCmd struct {
	TenantRef     string   `msgpack:"tenant_ref"`
	Cell          CellSpec `msgpack:"cell"`
	ExpectedEpoch *uint64  `msgpack:"expected_epoch"`
}

// updateCellInGraph is its payload from version 2 on: it may name a graph.
type updateCellInGraph struct {
	updateCellCmd
	GraphRef string `msgpack:"graph_ref,omitempty"`
}

// updateCellCommand is capacity_update_cell: controllers of the tenant
// only.
func updateCellCommand() fsm.Typed[updateCellInGraph] {
	t := graphCommand(func(c *updateCellInGraph) any { return &c.updateCellCmd },
		func(c *updateCellInGraph) (string, string) { return c.GraphRef, c.TenantRef }, "")
	t.Validate = (*updateCellInGraph).validate
	t.Role, t.Tenant = identity.RoleController, func(c *updateCellInGraph) string { return c.TenantRef }
	t.Forbidden = func(_ identity.Principal, c *updateCellInGraph) error {
		return errs.Errorf(errs.CodeForbidden, "updating capacity cells needs the controller role in tenant %q", c.TenantRef)
	}
	t.Apply = applyUpdateCell
	return t
}

// applyUpdateCell creates or changes a cell: the epoch advances by one;
// an expected epoch, if given, must match; no class's capacity may go
// below its durable usage.
func applyUpdateCell(tx *fsm.Tx, _ *log.Command, c *updateCellInGraph) (any, error) {
	res := &UpdateCellResult{SchemaVersion: SchemaVersion, NowMs: tx.Now}
	stored, err := getCell(tx, c.GraphRef, c.TenantRef, c.Cell.CellID)
	if err != nil {
		return nil, err
	}
	cell := &cellRow{TenantRef: c.TenantRef, GraphRef: c.GraphRef, CellID: c.Cell.CellID, Used: map[string]uint64{}}
	if stored != nil {
		cell = stored.clone()
	}
	if c.ExpectedEpoch != nil && *c.ExpectedEpoch != cell.Epoch {
		res.Decision, res.Message = StaleEpoch, fmt.Sprintf("cell %q is at epoch %d, not %d", cell.CellID, cell.Epoch, *c.ExpectedEpoch)
		res.Cell = statusOf(cell)
		return res, nil
	}
	for _, class := range sortedKeys(cell.Used) { // the first offender names the answer, on every replica
		if used := cell.Used[class]; c.Cell.Capacities[class] < used {
			res.Decision = Invalid
			res.Message = fmt.Sprintf("capacity of %q cannot go below its usage %d", class, used)
			res.Cell = statusOf(cell)
			return res, nil
		}
	}
	cell.Capacity = make(map[string]uint64, len(c.Cell.Capacities))
	for class, v := range c.Cell.Capacities {
		cell.Capacity[class] = v
	}
	cell.Epoch++
	cell.UpdatedAtMs = tx.Now
	if err := tx.Insert(tableCells, cell); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "update cell: %v", err)
	}
	if err := emit(tx, "capacity_cell", cell.GraphRef, cell.CellID, cell.TenantRef); err != nil {
		return nil, err
	}
	res.Decision, res.Cell = Granted, statusOf(cell)
	return res, nil
}

func sortedKeys(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// statusOf describes a cell, its classes in name order.
func statusOf(c *cellRow) CellStatus {
	classes := map[string]bool{}
	for k := range c.Capacity {
		classes[k] = true
	}
	for k := range c.Used {
		classes[k] = true
	}
	names := make([]string, 0, len(classes))
	for k := range classes {
		names = append(names, k)
	}
	sort.Strings(names)
	st := CellStatus{TenantRef: c.TenantRef, GraphRef: c.GraphRef, CellID: c.CellID, Epoch: c.Epoch, LastFence: c.LastFence, UpdatedAtMs: c.UpdatedAtMs, Classes: []Available{}}
	for _, k := range names {
		st.Classes = append(st.Classes, availableOf(c, k))
	}
	return st
}
