package client

import (
	"context"
	"net/http"
)

// Concepts is the concept reservation authority (/v1/concepts):
// create-once concept ids with fenced lifecycles under the cluster's
// namespace policies.
//
// A reservation is identified by its RequestRef: the same request again
// replays its claim (Replayed), so RequestRef is the key an unknown
// outcome names. A transition presents the fence it holds; a retry of
// one that committed replays it.
type Concepts struct{ c *Client }

// Reserve claims req.ConceptID (e.g. "RMDD-27") for the request (201
// created or reclaimed, 200 replayed). Another holder is errs.Conflict
// with the holder's public fields in the detail; no matching policy is
// errs.Invalid. With authentication, OwnerRef may be "": the owner is
// the principal.
func (s *Concepts) Reserve(ctx context.Context, req ReserveRequest) (*ReserveResult, error) {
	return do[ReserveResult](ctx, s.c, post("/v1/concepts/reserve", req, req.RequestRef))
}

// ReserveNext claims the first free number From..To (at most 128) of a
// namespace (and semantic prefix); every one held is errs.Exhausted.
func (s *Concepts) ReserveNext(ctx context.Context, req ReserveNextRequest) (*ReserveResult, error) {
	return do[ReserveResult](ctx, s.c, post("/v1/concepts/reserve-next", req, req.Request.RequestRef))
}

// Transition moves a claim (materialize, land, tombstone, release,
// expire), presenting the fence last answered; the record comes back
// with its new fence. Another fence is errs.StaleFence.
func (s *Concepts) Transition(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
	return do[TransitionResult](ctx, s.c, repeat(http.MethodPost, "/v1/concepts/transition", req))
}

// Get returns the claim's record, or errs.NotFound (also for another
// tenant's).
func (s *Concepts) Get(ctx context.Context, conceptID, tenantRef string) (*ConceptRecord, error) {
	return do[ConceptRecord](ctx, s.c, get("/v1/concepts/get", params("concept_id", conceptID, "tenant_ref", tenantRef)))
}

// List returns one page (Limit 1..128) of a tenant's claims
// (Consistency is not taken by this route).
func (s *Concepts) List(ctx context.Context, tenantRef string, p PageQuery) (*ConceptPage, error) {
	return do[ConceptPage](ctx, s.c, get("/v1/concepts/list", params("tenant_ref", tenantRef, "after", p.After, "limit", num(p.Limit))))
}

// Policies returns the cluster's namespace policy set.
func (s *Concepts) Policies(ctx context.Context, cons Consistency) (*Policies, error) {
	return do[Policies](ctx, s.c, get("/v1/concepts/policies", params("consistency", string(cons))))
}

// SetPolicies replaces the policy set (admin); Version 0 takes the next
// one. The same set again changes nothing (Changed false).
func (s *Concepts) SetPolicies(ctx context.Context, req PoliciesRequest) (*Policies, error) {
	return do[Policies](ctx, s.c, repeat(http.MethodPut, "/v1/concepts/policies", req))
}
