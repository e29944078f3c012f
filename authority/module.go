package authority

import (
	"encoding/json"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	memdb "github.com/hashicorp/go-memdb"
)

// Command and query types, inside the range 100-199 the module declares
// (Module: fsm.Module.Types).
const (
	// CmdSetPolicies replaces the replicated policy set (admins), or
	// seeds it from a node's --concept-policies (see policyset.go).
	CmdSetPolicies log.Type = 100
	// CmdReserve is a node_create of a claim, bound inside Apply to the
	// policy the replicated set selects for its concept id.
	CmdReserve log.Type = 101
	// CmdReclaim is a node_cas that reclaims a claim, bound the same way.
	CmdReclaim log.Type = 102

	QueryPolicies fsm.QueryType = 100
	QueryMode     fsm.QueryType = 101
)

const tablePolicies = "concept_policies"

// Module is the authority's FSM module: the replicated policy set and the
// two writes of a claim that select their policy from it. Everything
// else the authority writes and reads is the node primitives'.
func Module() fsm.Module {
	return fsm.Module{
		Name:  Name,
		Types: fsm.TypeRange{First: 100, Last: 199},
		Tables: []fsm.Table{{New: func() any { return new(policyRow) }, Schema: &memdb.TableSchema{
			Name: tablePolicies,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {Name: "id", Unique: true, Indexer: statestore.StringField("ID", func(r *policyRow) string { return r.ID })},
			},
		}}},
		Commands: []fsm.CommandSpec{
			// Each command's payload, access and prologue: its fsm.Typed.
			{Type: CmdSetPolicies, Name: "concept_policies_set", MaxVersion: 1, Apply: fsm.Handle(setPoliciesCommand())},
			{Type: CmdReserve, Name: "concept_reserve", MaxVersion: 1, Apply: fsm.Handle(boundCommand(applyReserve))},
			{Type: CmdReclaim, Name: "concept_reclaim", MaxVersion: 1, Apply: fsm.Handle(boundCommand(applyReclaim))},
		},
		Queries: []fsm.QuerySpec{
			{Type: QueryPolicies, Name: "concept_policies", Run: runPolicies},
			{Type: QueryMode, Name: "concept_mode", Run: runMode},
		},
	}
}

// embedNodes applies the node writes of CmdReserve and CmdReclaim. It
// accepts the authority's own adapter in place of the admin role: the
// authority's routes check the caller's tenant and role before they
// propose under it. Static, so alike on every replica.
var embedNodes = nodes.Embed(nodes.AcceptAdapters(Name))

// boundCmd is the payload of CmdReserve and CmdReclaim: the concept id
// and the node command (node_create, node_cas) that writes its claim.
type boundCmd struct {
	ConceptID   string `msgpack:"concept_id"`
	NodeVersion uint16 `msgpack:"node_version"`
	Node        []byte `msgpack:"node"`
}

// applyReserve creates a claim's node unless it exists, with the policy
// fields of its record set from the one policy of the replicated set
// that covers the concept id, as of this entry: every replica decides
// alike, whatever policies the proposing node was given. A node that
// exists is answered without judging the policy (the service classifies
// it: a replay, a reclaim, a conflict), so a retry of a claim made under
// a policy since removed still replays.
func applyReserve(tx *fsm.Tx, _ *log.Command, c *boundCmd) (any, error) {
	id, err := ParseConceptID(c.ConceptID) // valid: see boundCommand
	if err != nil {
		return nil, err
	}
	return embedNodes.ApplyCreate(tx, c.NodeVersion, c.Node, func(n *nodes.CreateCommand) error {
		if n.NodeID != id.NodeID() {
			return errs.Errorf(errs.CodeInvalid, "node %q is not the node of %s", n.NodeID, id)
		}
		return bindPolicy(tx, id, n.Properties)
	})
}

// applyReclaim is the CAS that hands a released or expired claim to a
// new request, bound to the replicated policy as applyReserve binds a
// create.
func applyReclaim(tx *fsm.Tx, _ *log.Command, c *boundCmd) (any, error) {
	id, err := ParseConceptID(c.ConceptID) // valid: see boundCommand
	if err != nil {
		return nil, err
	}
	return embedNodes.ApplyCAS(tx, c.NodeVersion, c.Node, func(n *nodes.CASCommand) error {
		if n.NodeID != id.NodeID() {
			return errs.Errorf(errs.CodeInvalid, "node %q is not the node of %s", n.NodeID, id)
		}
		if n.Updates == nil {
			n.Updates = map[string]json.RawMessage{}
		}
		return bindPolicy(tx, id, n.Updates)
	})
}

// boundCommand is the typed shape (fsm.Typed) of CmdReserve and
// CmdReclaim: a payload whose concept id parses. Access is the node
// primitives' (embedNodes: the authority's adapter, or the admin role),
// judged when the body hands them the node command.
func boundCommand(apply func(*fsm.Tx, *log.Command, *boundCmd) (any, error)) fsm.Typed[boundCmd] {
	return fsm.Typed[boundCmd]{
		Validate: func(c *boundCmd) error {
			_, err := ParseConceptID(c.ConceptID)
			return err
		},
		Apply: apply,
	}
}

// setPoliciesCommand is the typed shape of CmdSetPolicies: access first
// (a seed from the authority's adapter, or an admin of every tenant),
// then the body validates the set, as it always did.
func setPoliciesCommand() fsm.Typed[setPoliciesCmd] {
	return fsm.Typed[setPoliciesCmd]{
		// A seed is the node's own configuration: the node itself, or
		// the authority's in-server adapter (which builds the payload
		// from that configuration, never from a caller), may propose it.
		Access: func(tx *fsm.Tx, c *setPoliciesCmd) error {
			if !(c.Seed && tx.Adapter == Name) && !(tx.Principal.HasRole(identity.RoleAdmin) && fsm.InEveryTenant(tx.Principal)) {
				return errs.Errorf(errs.CodeForbidden, "setting concept policies needs the admin role for every tenant; principal %q has not", tx.Principal.ID)
			}
			return nil
		},
		Apply: applySetPolicies,
	}
}

// bindPolicy selects id's policy from the replicated set and writes the
// record's identity and policy fields into fields (a create's properties
// or a reclaim's updates), replacing whatever the proposer put there.
func bindPolicy(tx *fsm.Tx, id ConceptID, fields map[string]json.RawMessage) error {
	row, err := storedPolicies(tx)
	if err != nil {
		return err
	}
	if row == nil {
		return errs.New(errs.CodeInvalid, "no concept namespace policies are configured in this cluster (PUT /v1/concepts/policies, or arbiter serve --concept-policies)")
	}
	pol, err := selectPolicy(row.Policies, id)
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "%s (policy set version %d)", errs.From(err).Message, row.Version)
	}
	values, err := nodes.CanonicalFields("record", map[string]any{
		"concept_id": id.String(), "namespace": id.Namespace, "number": id.Number,
		"policy_version": pol.PolicyVersion, "range_min": pol.Min, "range_max": pol.Max,
	})
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "bind policy: %v", err)
	}
	for k, v := range values { // order-free: sets distinct keys
		fields[k] = v
	}
	if id.Prefix != "" {
		fields["prefix"] = json.RawMessage(`"` + id.Prefix + `"`) // A-Z0-9 and hyphens: no escapes
	} else {
		delete(fields, "prefix")
	}
	return nil
}

// ModeView is the answer of QueryMode: how the cluster lets the service
// write claims. A service asks before every reserve (one cheap query).
type ModeView struct {
	// Bound: the cluster enables CmdReserve and CmdReclaim, so claims
	// are bound to the replicated policy set inside Apply.
	Bound bool `msgpack:"bound" json:"bound"`
	// IndexFences: version 2 of the node primitives (fences from the log
	// index, see fence.go).
	IndexFences bool `msgpack:"index_fences" json:"index_fences"`
	// Configured: the cluster holds a policy set; Version is its version.
	Configured bool   `msgpack:"configured" json:"configured"`
	Version    uint64 `msgpack:"version" json:"version"`
}

// runMode answers QueryMode. It reads the enabled set and the policy
// set's version, no tenant's data: any principal may ask.
func runMode(rt *fsm.ReadTx, _ []byte) (any, error) {
	v := ModeView{
		Bound:       rt.EnabledVersion(CmdReserve) >= 1 && rt.EnabledVersion(CmdReclaim) >= 1,
		IndexFences: rt.EnabledVersion(nodes.CmdCreate) >= nodes.IndexVersion && rt.EnabledVersion(nodes.CmdCAS) >= nodes.IndexVersion,
	}
	row, err := storedPolicies(rt.Txn)
	if err != nil {
		return nil, err
	}
	if row != nil {
		v.Configured, v.Version = true, row.Version
	}
	return v, nil
}
