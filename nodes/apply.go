package nodes

import (
	"bytes"
	"encoding/json"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
)

const (
	tableNodes  = "nodes"
	tableLabels = "node_labels"
)

// Module is the FSM module of the node primitives. opts name the
// in-server adapters it accepts in place of the admin role
// (AcceptAdapters; none without).
func Module(opts ...Option) fsm.Module {
	a := newAccess(opts)
	return fsm.Module{
		Name:  Name,
		Types: fsm.TypeRange{First: 10, Last: 99},
		Tables: []fsm.Table{
			{New: func() any { return new(storedNode) }, Schema: &memdb.TableSchema{
				Name: tableNodes,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {Name: "id", Unique: true, Indexer: statestore.StringField("NodeID", func(n *storedNode) string { return n.NodeID })},
				},
			}},
			{New: func() any { return new(labelRow) }, Schema: &memdb.TableSchema{
				Name: tableLabels,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {Name: "id", Unique: true, Indexer: statestore.StringFields("Label", "NodeID",
						func(l *labelRow) (string, string) { return l.Label, l.NodeID })},
				},
			}},
		},
		Commands: []fsm.CommandSpec{
			// 2: set_index (fields set to the entry's log index; see IndexFields)
			// Each command's payload, access and prologue: its fsm.Typed.
			{Type: CmdCreate, Name: "node_create", MaxVersion: IndexVersion, Apply: fsm.Handle(a.createCommand())},
			{Type: CmdCAS, Name: "node_cas", MaxVersion: IndexVersion, Apply: fsm.Handle(a.casCommand())},
		},
		Queries: []fsm.QuerySpec{
			{Type: QueryGet, Name: "node_get", Run: a.runGetNode},
			{Type: QueryByLabel, Name: "nodes_by_label", Run: a.runNodesByLabel},
			{Type: QueryIndexFields, Name: "node_index_fields", Run: runIndexFields},
		},
		EventValues: map[string]fsm.EventValue{"node_create": nodeEventValue, "node_cas": nodeEventValue},
	}
}

// nodeEventValue is the node a node_create or node_cas event wrote, as
// JSON (a node as the API shows it), while no later change replaced it:
// the node's modified index is the event's.
func nodeEventValue(rt *fsm.ReadTx, key string, index uint64) (json.RawMessage, bool, error) {
	n, err := getNode(rt.Txn, key)
	if err != nil || n == nil || n.ModifiedIndex != index {
		return nil, false, err
	}
	b, err := json.Marshal(n)
	if err != nil {
		return nil, false, errs.Errorf(errs.CodeInternal, "node %q: %v", key, err)
	}
	return b, true, nil
}

// guard is the access of the raw node API, judged before a payload is
// decoded: it depends on the principal and the adapter alone.
func (a access) guard(tx *fsm.Tx) error { return a.raw(tx.Principal, tx.Adapter) }

// createCommand is node_create: the raw API's access (guard), then the
// payload decoded by its version's schema; create validates it.
func (a access) createCommand() fsm.Typed[createArgs] {
	return fsm.Typed[createArgs]{
		Guard: a.guard,
		Decode: func(_ *fsm.Tx, cmd *log.Command, c *createArgs) (err error) {
			*c, err = decodeCreate(cmd)
			return err
		},
		Apply: applyCreateNode,
	}
}

// applyCreateNode stores the node unless one with the same id exists; the
// first writer in log order wins, every later one reads the winner.
func applyCreateNode(tx *fsm.Tx, cmd *log.Command, c *createArgs) (any, error) {
	return create(tx, cmd.Version, *c)
}

// create is node_create's handler after access and decoding, for a
// command of version v.
func create(tx *fsm.Tx, v uint16, c createArgs) (any, error) {
	if err := validateNodeID(c.NodeID); err != nil {
		return nil, err
	}
	// c is this apply's own decoding: its labels may be sorted in place.
	labels, err := sortLabels(c.Labels)
	if err != nil {
		return nil, err
	}
	if err := c.Properties.check("properties", len(c.Properties)); err != nil {
		return nil, err
	}
	if err := checkTimeFields(c.SetNow, nil, nil, c.Properties.has); err != nil {
		return nil, err
	}
	if err := c.IndexFields.check(v, c.Properties.has, c.SetNow); err != nil {
		return nil, err
	}
	if existing, err := getStored(tx, c.NodeID); err != nil {
		return nil, err
	} else if existing != nil {
		return storedResult{created: false, node: existing}.boxed(), nil
	}
	// c's properties are this apply's own decoding too: changed in place.
	props := c.Properties.withoutNulls()
	for k, v := range setNowValues(c.SetNow, tx.Now) {
		props.set(k, v)
	}
	for k, v := range c.IndexFields.values(tx.Index) {
		props.set(k, v)
	}
	if size := props.objectSize(); size > MaxPropertiesBytes {
		return nil, errs.Errorf(errs.CodeInvalid, "properties would be %d bytes, more than %d", size, MaxPropertiesBytes)
	}
	stored := &storedNode{NodeID: c.NodeID, Labels: labels, Properties: props,
		Version: 1, CreatedIndex: tx.Index, ModifiedIndex: tx.Index}
	if err := tx.Insert(tableNodes, stored); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "insert node: %v", err)
	}
	for _, l := range labels {
		if err := tx.Insert(tableLabels, &labelRow{Label: l, NodeID: c.NodeID}); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "insert label: %v", err)
		}
	}
	tx.Emit("node_create", c.NodeID, "")
	// Rows are never changed once inserted, and the FSM encodes a result
	// at once (fsm.Response.Result): the stored row itself is the result.
	return storedResult{created: true, node: stored}.boxed(), nil
}

// casCommand is node_cas: the raw API's access (guard), then the payload
// decoded by its version's schema; compareAndSet validates it.
func (a access) casCommand() fsm.Typed[CASCommand] {
	return fsm.Typed[CASCommand]{
		Guard: a.guard,
		Decode: func(_ *fsm.Tx, cmd *log.Command, c *CASCommand) (err error) {
			*c, err = decodeCAS(cmd)
			return err
		},
		Apply: applyCAS,
	}
}

// applyCAS checks every condition against the stored node and, only if all
// hold, applies every update in the same step.
func applyCAS(tx *fsm.Tx, cmd *log.Command, c *CASCommand) (any, error) {
	return compareAndSet(tx, cmd.Version, c)
}

// compareAndSet is node_cas's handler after access and decoding, for a
// command of version v.
func compareAndSet(tx *fsm.Tx, v uint16, c *CASCommand) (any, error) {
	if err := validateNodeID(c.NodeID); err != nil {
		return nil, err
	}
	if err := checkFields("conditions", c.Conditions, MaxFieldsPerCAS); err != nil {
		return nil, err
	}
	if err := checkFields("updates", c.Updates, MaxFieldsPerCAS); err != nil {
		return nil, err
	}
	if err := c.TimeFields.check(c.Updates); err != nil {
		return nil, err
	}
	if err := c.IndexFields.check(v, inMap(c.Updates), c.SetNow); err != nil {
		return nil, err
	}
	if err := c.LabelEdits.check(); err != nil {
		return nil, err
	}
	if c.writes() == 0 {
		return nil, errs.New(errs.CodeInvalid, "updates is empty")
	}
	stored, err := getNode(tx, c.NodeID)
	if err != nil {
		return nil, err
	}
	if stored == nil {
		return nil, errs.Errorf(errs.CodeNotFound, "node %q does not exist", c.NodeID)
	}
	if len(c.failures(stored.Properties, tx.Now, 1)) > 0 {
		return CASResult{Swapped: false, Node: *stored}, nil
	}
	// getNode's answer is a copy already, the caller's to change.
	next := *stored
	for k, v := range c.Updates { // order-free: each field is set or removed once
		if bytes.Equal(v, null) {
			delete(next.Properties, k)
		} else {
			next.Properties[k] = v
		}
	}
	for k, v := range setNowValues(c.SetNow, tx.Now) {
		next.Properties[k] = v
	}
	for k, v := range c.IndexFields.values(tx.Index) {
		next.Properties[k] = v
	}
	if n := objectSize(next.Properties); n > MaxPropertiesBytes {
		return nil, errs.Errorf(errs.CodeInvalid, "properties after update would be %d bytes, more than %d", n, MaxPropertiesBytes)
	}
	labels, added, removed, err := c.LabelEdits.apply(next.Labels)
	if err != nil {
		return nil, err
	}
	next.Labels = labels
	next.Version++
	next.ModifiedIndex = tx.Index
	if err := tx.Insert(tableNodes, storedOf(&next)); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "update node: %v", err)
	}
	for _, l := range removed {
		if err := tx.Delete(tableLabels, &labelRow{Label: l, NodeID: next.NodeID}); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "remove label: %v", err)
		}
	}
	for _, l := range added {
		if err := tx.Insert(tableLabels, &labelRow{Label: l, NodeID: next.NodeID}); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "add label: %v", err)
		}
	}
	tx.Emit("node_cas", next.NodeID, "")
	return CASResult{Swapped: true, Node: next.clone()}, nil
}

// getNode is a copy of the stored node id, the caller's to change, or nil.
func getNode(txn fsm.Store, id string) (*Record, error) {
	s, err := getStored(txn, id)
	if s == nil || err != nil {
		return nil, err
	}
	return s.node(), nil
}

// getStored is the stored node id, which nobody may change, or nil.
func getStored(txn fsm.Store, id string) (*storedNode, error) {
	raw, err := txn.FirstString(tableNodes, "id", id)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read node: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*storedNode), nil
}
