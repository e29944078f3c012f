package mcptools

import (
	"context"

	"github.com/arbiterhq/arbiter/client"
)

// Concepts: the concept reservation authority. The owner of a claim is
// the caller's principal (its owner digest, from whoami): no input
// names it.

// conceptRequest is client.ReserveRequest without owner_ref.
type conceptRequest struct {
	ConceptID      string   `json:"concept_id,omitempty" jsonschema:"the concept id to claim, e.g. RMDD-27 (reserve); empty in reserve_next's request"`
	TenantRef      string   `json:"tenant_ref" jsonschema:"the tenant the claim belongs to"`
	RepositoryRef  string   `json:"repository_ref,omitempty"`
	LaneRef        string   `json:"lane_ref,omitempty"`
	RequestRef     string   `json:"request_ref" jsonschema:"identifies this request: the same request_ref again replays its claim, so reuse it to retry"`
	DesignRef      string   `json:"design_ref,omitempty"`
	ProvenanceRefs []string `json:"provenance_refs,omitempty"`
	PurposeDigest  string   `json:"purpose_digest" jsonschema:"sha256:<hex> of what the concept is for"`
	TTLMs          int64    `json:"ttl_ms,omitempty" jsonschema:"how long the reservation lives before it must be materialized (default the policy's)"`
	RangeMin       *uint64  `json:"range_min,omitempty"`
	RangeMax       *uint64  `json:"range_max,omitempty"`
}

func (r conceptRequest) request(owner string) client.ReserveRequest {
	return client.ReserveRequest{ConceptID: r.ConceptID, TenantRef: r.TenantRef, RepositoryRef: r.RepositoryRef,
		LaneRef: r.LaneRef, OwnerRef: owner, RequestRef: r.RequestRef, DesignRef: r.DesignRef,
		ProvenanceRefs: r.ProvenanceRefs, PurposeDigest: r.PurposeDigest, TTLMs: r.TTLMs,
		RangeMin: r.RangeMin, RangeMax: r.RangeMax}
}

type reserveNextInput struct {
	Namespace string         `json:"namespace" jsonschema:"the namespace to number in, e.g. RMDD"`
	Prefix    string         `json:"prefix,omitempty" jsonschema:"a semantic prefix inside the namespace"`
	From      uint64         `json:"from" jsonschema:"the first number to try"`
	To        uint64         `json:"to" jsonschema:"the last number to try (at most 128 numbers)"`
	Request   conceptRequest `json:"request"`
}

// conceptTransitionInput is client.TransitionRequest without owner_ref.
type conceptTransitionInput struct {
	ConceptID     string `json:"concept_id"`
	TenantRef     string `json:"tenant_ref"`
	ReservationID string `json:"reservation_id" jsonschema:"the reservation_id of the claim's record"`
	Fingerprint   string `json:"fingerprint" jsonschema:"the fingerprint of the claim's record"`
	ExpectedFence uint64 `json:"expected_fence" jsonschema:"the fence of the record last answered; another is stale_fence"`
	Action        string `json:"action" jsonschema:"materialize, land, tombstone or release"`
}

type conceptGetInput struct {
	ConceptID string `json:"concept_id"`
	TenantRef string `json:"tenant_ref,omitempty"`
}

// ownerDigest is the caller's owner digest: what owner fields must be.
func ownerDigest(ctx context.Context, c *client.Client) (string, error) {
	who, err := c.Cluster().Whoami(ctx)
	if err != nil {
		return "", err
	}
	return who.OwnerDigest, nil
}

func (r *registrar) concepts() {
	const d = "authority"
	add(r, tool{name: "concept_reserve", domain: d, op: "post_v1_concepts_reserve", fills: []string{"owner_ref"},
		required:    []string{"concept_id", "tenant_ref", "request_ref", "purpose_digest"},
		description: "Claim a concept id (e.g. RMDD-27) for this caller under the cluster's namespace policies. Created or reclaimed: the claim is yours, keep its record's reservation_id, fingerprint and fence for concept_transition. Another holder is a conflict error whose detail names the holder; no matching policy is invalid."},
		func(ctx context.Context, c *client.Client, in conceptRequest) (any, error) {
			owner, err := ownerDigest(ctx, c)
			if err != nil {
				return nil, err
			}
			return c.Concepts().Reserve(ctx, in.request(owner))
		})
	add(r, tool{name: "concept_reserve_next", domain: d, op: "post_v1_concepts_reserve_next", fills: []string{"request.owner_ref"},
		required:    []string{"namespace", "from", "to", "request", "request.tenant_ref", "request.request_ref", "request.purpose_digest"},
		description: "Claim the first free number from..to (at most 128) of a namespace for this caller; every one held is exhausted."},
		func(ctx context.Context, c *client.Client, in reserveNextInput) (any, error) {
			owner, err := ownerDigest(ctx, c)
			if err != nil {
				return nil, err
			}
			return c.Concepts().ReserveNext(ctx, client.ReserveNextRequest{Namespace: in.Namespace, Prefix: in.Prefix,
				From: in.From, To: in.To, Request: in.Request.request(owner)})
		})
	add(r, tool{name: "concept_transition", domain: d, op: "post_v1_concepts_transition", fills: []string{"owner_ref"},
		required:    []string{"concept_id", "tenant_ref", "reservation_id", "fingerprint", "expected_fence", "action"},
		description: "Move this caller's claim: materialize, land, tombstone or release, presenting the fence last answered (another fence is stale_fence); the record comes back with its new fence."},
		func(ctx context.Context, c *client.Client, in conceptTransitionInput) (any, error) {
			owner, err := ownerDigest(ctx, c)
			if err != nil {
				return nil, err
			}
			return c.Concepts().Transition(ctx, client.TransitionRequest{ConceptID: in.ConceptID, TenantRef: in.TenantRef,
				OwnerRef: owner, ReservationID: in.ReservationID, Fingerprint: in.Fingerprint,
				ExpectedFence: in.ExpectedFence, Action: in.Action})
		})
	add(r, tool{name: "concept_get", domain: d, readOnly: true, op: "get_v1_concepts_get", required: []string{"concept_id"},
		description: "Read a concept claim's record (state, owner, fence), or not_found."},
		func(ctx context.Context, c *client.Client, in conceptGetInput) (any, error) {
			return c.Concepts().Get(ctx, in.ConceptID, in.TenantRef)
		})
}
