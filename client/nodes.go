package client

import "context"

// Nodes is the node primitives (/v1/nodes, admin role): create-if-absent
// with exactly one winner per id, and compare-and-set that checks every
// condition and applies every update in one log entry.
type Nodes struct{ c *Client }

// Create creates the node unless one has its id; Created says which
// (exactly one caller ever gets true for an id). Without an
// IdempotencyKey one is generated: set it to retry after an unknown
// outcome (a retry then answers this call's own result, Replayed).
func (s *Nodes) Create(ctx context.Context, req CreateRequest) (*CreateResult, error) {
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[CreateResult](ctx, s.c, post("/v1/nodes/create", req, req.IdempotencyKey))
}

// CAS applies every update if every condition holds, atomically. A
// condition of nil requires the field to be absent; an update of nil
// removes it. Swapped is false with Failed naming each check that did
// not hold; a missing node is errs.NotFound.
func (s *Nodes) CAS(ctx context.Context, req CASRequest) (*CASResult, error) {
	req.IdempotencyKey = keyOr(req.IdempotencyKey)
	return do[CASResult](ctx, s.c, post("/v1/nodes/cas", req, req.IdempotencyKey))
}

// Get returns the node, or errs.NotFound.
func (s *Nodes) Get(ctx context.Context, nodeID string, cons Consistency) (*Record, error) {
	return do[Record](ctx, s.c, get("/v1/nodes/get", params("node_id", nodeID, "consistency", string(cons))))
}

// ByLabel returns one page (Limit 1..128) of the nodes with a label; pass
// NextCursor as After for the next ("": the last page).
func (s *Nodes) ByLabel(ctx context.Context, label string, p PageQuery) (*NodePage, error) {
	return do[NodePage](ctx, s.c, get("/v1/nodes/by-label", p.params("label", label)))
}
