package fsm

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Consistency selects how a read is served.
type Consistency int

const (
	// Linearizable reads reflect every write acknowledged before the read
	// began; the leader confirms its leadership first.
	Linearizable Consistency = iota
	// Stale reads are answered from the local replica, which may be behind.
	Stale
)

// Nodes is the typed client of the node primitives over any Proposer and
// Reader: an embedded cluster.Node, a cluster.Remote, or a bare FSM.
type Nodes struct {
	p Proposer
	r Reader
}

// NewNodes returns a client of the node primitives.
func NewNodes(p Proposer, r Reader) *Nodes { return &Nodes{p: p, r: r} }

// CreateNodeRequest asks to create a node unless it exists. Property values
// are any JSON-compatible Go values (json.Number and json.RawMessage keep
// their exact literals); a nil value means the field is absent.
type CreateNodeRequest struct {
	NodeID     string         `json:"node_id"`
	Labels     []string       `json:"labels"`
	Properties map[string]any `json:"properties"`
	// SetNow sets fields to FSM time plus an offset in milliseconds, for
	// timestamps and deadlines decided by the log's clock.
	SetNow map[string]int64 `json:"set_now,omitempty"`
	// IdempotencyKey, if set, makes a retry after an unknown outcome return
	// this call's own result (with Replayed) instead of created=false.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// CASRequest asks to apply every update if every condition holds. A
// condition value of nil requires the field to be absent; an update value
// of nil removes the field.
type CASRequest struct {
	NodeID     string         `json:"node_id"`
	Conditions map[string]any `json:"conditions"`
	Updates    map[string]any `json:"updates"`
	// TimeFields adds deadline conditions (due, not_due) and fields set to
	// FSM time (set_now), all judged by the log's clock.
	TimeFields
	// LabelEdits add and remove labels along with the updates.
	LabelEdits
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// CreateIfAbsent creates the node if no node has its id. Exactly one caller
// ever gets Created == true for an id; every other gets the stored node.
func (n *Nodes) CreateIfAbsent(ctx context.Context, req CreateNodeRequest) (*CreateNodeResult, error) {
	cmd, err := req.command()
	if err != nil {
		return nil, err
	}
	var out CreateNodeResult
	res, err := Submit(ctx, n.p, log.Command{Type: CmdNodeCreate, IdemScope: scopeIf(req.IdempotencyKey), IdemKey: req.IdempotencyKey}, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed, out.TimeMs = res.Replayed, res.Time
	return &out, nil
}

func (req CreateNodeRequest) command() (*CreateNodeCommand, error) {
	if err := validateNodeID(req.NodeID); err != nil {
		return nil, err
	}
	if err := bounds.OptionalIdentifier("idempotency_key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	labels, err := normalizeLabels(req.Labels)
	if err != nil {
		return nil, err
	}
	props, err := CanonicalFields("properties", req.Properties)
	if err != nil {
		return nil, err
	}
	props = withoutNulls(props)
	if err := checkFields("properties", props, len(props)); err != nil {
		return nil, err
	}
	if err := checkTimeFields(req.SetNow, nil, nil, props); err != nil {
		return nil, err
	}
	return &CreateNodeCommand{NodeID: req.NodeID, Labels: labels, Properties: props, SetNow: req.SetNow}, nil
}

// CompareAndSet applies req.Updates if every condition holds, atomically.
// It fails with errs.NotFound if the node does not exist.
func (n *Nodes) CompareAndSet(ctx context.Context, req CASRequest) (*CASResult, error) {
	cmd, err := req.command()
	if err != nil {
		return nil, err
	}
	var out CASResult
	res, err := Submit(ctx, n.p, log.Command{Type: CmdNodeCAS, IdemScope: scopeIf(req.IdempotencyKey), IdemKey: req.IdempotencyKey}, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed, out.TimeMs = res.Replayed, res.Time
	return &out, nil
}

func (req CASRequest) command() (*CASCommand, error) {
	if err := validateNodeID(req.NodeID); err != nil {
		return nil, err
	}
	if err := bounds.OptionalIdentifier("idempotency_key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	conds, err := CanonicalFields("conditions", req.Conditions)
	if err != nil {
		return nil, err
	}
	updates, err := CanonicalFields("updates", req.Updates)
	if err != nil {
		return nil, err
	}
	if err := checkFields("conditions", conds, MaxFieldsPerCAS); err != nil {
		return nil, err
	}
	if err := checkFields("updates", updates, MaxFieldsPerCAS); err != nil {
		return nil, err
	}
	if err := req.TimeFields.check(updates); err != nil {
		return nil, err
	}
	if err := req.LabelEdits.check(); err != nil {
		return nil, err
	}
	if len(updates)+len(req.SetNow)+len(req.AddLabels)+len(req.RemoveLabels) == 0 {
		return nil, errs.New(errs.CodeInvalid, "updates is empty")
	}
	return &CASCommand{NodeID: req.NodeID, Conditions: conds, Updates: updates, TimeFields: req.TimeFields, LabelEdits: req.LabelEdits}, nil
}

// Get reads one node; errs.NotFound if it does not exist.
func (n *Nodes) Get(ctx context.Context, nodeID string, c Consistency) (*Node, error) {
	if err := validateNodeID(nodeID); err != nil {
		return nil, err
	}
	var out Node
	if err := Ask(ctx, n.r, QueryNodeGet, c == Stale, GetNodeQuery{NodeID: nodeID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ByLabel reads one page of the nodes carrying q.Label, in node id order.
func (n *Nodes) ByLabel(ctx context.Context, q LabelQuery, c Consistency) (*NodePage, error) {
	if err := validateLabelQuery(&q); err != nil {
		return nil, err
	}
	var out NodePage
	if err := Ask(ctx, n.r, QueryNodesByLabel, c == Stale, q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func scopeIf(key string) string {
	if key == "" {
		return ""
	}
	return nodeIdempotencyKind
}
