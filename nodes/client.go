package nodes

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Client is the typed client of the node primitives over any fsm.Proposer
// and fsm.Reader: an embedded cluster.Node, a cluster.Remote, or a bare FSM.
type Client struct {
	p fsm.Proposer
	r fsm.Reader
}

// NewClient returns a client of the node primitives.
func NewClient(p fsm.Proposer, r fsm.Reader) *Client { return &Client{p: p, r: r} }

// CreateRequest asks to create a node unless it exists. Property values
// are any JSON-compatible Go values (json.Number and json.RawMessage keep
// their exact literals); a nil value means the field is absent.
type CreateRequest struct {
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
func (n *Client) CreateIfAbsent(ctx context.Context, req CreateRequest) (*CreateResult, error) {
	cmd, err := req.command()
	if err != nil {
		return nil, err
	}
	var out CreateResult
	res, err := fsm.Submit(ctx, n.p, log.Command{Type: CmdCreate, IdemScope: scopeIf(req.IdempotencyKey), IdemKey: req.IdempotencyKey}, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed, out.TimeMs = res.Replayed, res.Time
	return &out, nil
}

func (req CreateRequest) command() (*CreateCommand, error) {
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
	return &CreateCommand{NodeID: req.NodeID, Labels: labels, Properties: props, SetNow: req.SetNow}, nil
}

// CompareAndSet applies req.Updates if every condition holds, atomically.
// It fails with errs.NotFound if the node does not exist.
func (n *Client) CompareAndSet(ctx context.Context, req CASRequest) (*CASResult, error) {
	cmd, err := req.command()
	if err != nil {
		return nil, err
	}
	var out CASResult
	res, err := fsm.Submit(ctx, n.p, log.Command{Type: CmdCAS, IdemScope: scopeIf(req.IdempotencyKey), IdemKey: req.IdempotencyKey}, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed, out.TimeMs = res.Replayed, res.Time
	if !out.Swapped {
		out.Failed = cmd.failures(out.Node.Properties, res.Time, 0)
	}
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
func (n *Client) Get(ctx context.Context, nodeID string, c fsm.Consistency) (*Node, error) {
	if err := validateNodeID(nodeID); err != nil {
		return nil, err
	}
	var out Node
	if err := fsm.Ask(ctx, n.r, QueryGet, c == fsm.Stale, GetQuery{NodeID: nodeID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ByLabel reads one page of the nodes carrying q.Label, in node id order.
func (n *Client) ByLabel(ctx context.Context, q LabelQuery, c fsm.Consistency) (*Page, error) {
	if err := validateLabelQuery(&q); err != nil {
		return nil, err
	}
	var out Page
	if err := fsm.Ask(ctx, n.r, QueryByLabel, c == fsm.Stale, q, &out); err != nil {
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

// Require fails with unavailable, naming what is missing, unless the
// cluster behind the client enables the node primitives at the version
// this package sends.
func (n *Client) Require(ctx context.Context) error {
	return fsm.Require(ctx, n.r, Module().Capabilities())
}
