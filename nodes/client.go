package nodes

import (
	"context"
	"strings"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Client is the typed client of the node primitives over any fsm.Proposer
// and fsm.Reader: an embedded cluster.Node, or a bare FSM. (A program
// that runs no node uses package client.)
type Client struct {
	p fsm.Proposer
	r fsm.Reader
}

// On returns a client of the node primitives on b, which proposes and
// reads: an embedded cluster.Node, a bare FSM.
func On(b domain.Backend) *Client { return &Client{p: b, r: b} }

// NewClient returns a client of the node primitives that proposes to p
// and reads from r (On, where they are one).
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
	// IndexFields set fields to the log index of the entry that creates
	// the node: values that never go backwards, restores included. The
	// cluster must enable version 2 of node_create (IndexFieldsEnabled).
	IndexFields
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
	// IndexFields set fields to the log index of the entry that applies
	// the CAS. The cluster must enable version 2 of node_cas
	// (IndexFieldsEnabled).
	IndexFields
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
	res, err := fsm.Submit(ctx, n.p, log.Command{Type: CmdCreate, Version: cmd.version(), IdemScope: scopeIf(req.IdempotencyKey), IdemKey: req.IdempotencyKey}, cmd, &out)
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
	props = deleteNulls(props)
	if err := checkFields("properties", props, len(props)); err != nil {
		return nil, err
	}
	if err := checkTimeFields(req.SetNow, nil, nil, inMap(props)); err != nil {
		return nil, err
	}
	if err := req.IndexFields.check(req.version(), inMap(props), req.SetNow); err != nil {
		return nil, err
	}
	return &CreateCommand{NodeID: req.NodeID, Labels: labels, Properties: props, SetNow: req.SetNow, IndexFields: req.IndexFields}, nil
}

// CompareAndSet applies req.Updates if every condition holds, atomically.
// It fails with errs.NotFound if the node does not exist.
func (n *Client) CompareAndSet(ctx context.Context, req CASRequest) (*CASResult, error) {
	cmd, err := req.command()
	if err != nil {
		return nil, err
	}
	var out CASResult
	res, err := fsm.Submit(ctx, n.p, log.Command{Type: CmdCAS, Version: cmd.version(), IdemScope: scopeIf(req.IdempotencyKey), IdemKey: req.IdempotencyKey}, cmd, &out)
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
	if err := req.IndexFields.check(req.version(), inMap(updates), req.SetNow); err != nil {
		return nil, err
	}
	if err := req.LabelEdits.check(); err != nil {
		return nil, err
	}
	cmd := &CASCommand{NodeID: req.NodeID, Conditions: conds, Updates: updates, TimeFields: req.TimeFields, IndexFields: req.IndexFields, LabelEdits: req.LabelEdits}
	if cmd.writes() == 0 {
		return nil, errs.New(errs.CodeInvalid, "updates is empty")
	}
	return cmd, nil
}

// Get reads one node; errs.NotFound if it does not exist.
func (n *Client) Get(ctx context.Context, nodeID string, c fsm.Consistency) (*Record, error) {
	if err := validateNodeID(nodeID); err != nil {
		return nil, err
	}
	var out Record
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

// IndexFieldsEnabled reports whether the cluster enables version 2 of
// node_create and node_cas (IndexFields). A yes comes from the replica
// behind the client and may be stale: a command sent on it is refused
// (unavailable) if the cluster has lowered the version since, and
// changes nothing. A no is confirmed by a linearizable read, because a
// caller that hears it falls back to something weaker (the concept
// authority counts fences), and a replica that is catching up (restarted
// and replaying from before the set was enabled) would say no in a
// cluster that enables it. Ungated state (a bare FSM in tests) answers
// no, and so does a server too old to know the query (it cannot have
// enabled version 2 either).
func (n *Client) IndexFieldsEnabled(ctx context.Context) (bool, error) {
	for _, stale := range []bool{true, false} {
		var v IndexFieldsView
		err := fsm.Ask(ctx, n.r, QueryIndexFields, stale, struct{}{}, &v)
		if e := errs.From(err); e != nil && e.Code == errs.CodeInvalid && strings.HasPrefix(e.Message, "unknown query type") {
			return false, nil // an older server
		}
		if err != nil || v.Enabled {
			return v.Enabled, err
		}
	}
	return false, nil
}

// Require fails with unavailable, naming what is missing, unless the
// cluster behind the client enables the node primitives (Needed).
func (n *Client) Require(ctx context.Context) error {
	return fsm.Require(ctx, n.r, Needed())
}

// Needed is what a client of the node primitives needs a cluster to
// enable: version 1 of every command. Version 2 (IndexFields) is used
// only where the cluster enables it (IndexFieldsEnabled), so a cluster
// still part-way through an upgrade serves this package's clients.
func Needed() fsm.Capabilities {
	c := Module().Capabilities()
	for i := range c.Domains {
		for j := range c.Domains[i].Commands {
			c.Domains[i].Commands[j].Version = 1
		}
	}
	return c
}
