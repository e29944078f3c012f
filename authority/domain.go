package authority

import (
	"context"
	"flag"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/arbiterhq/arbiter/retry"
)

// Name is the domain's name; it is also the adapter name under which the
// authority reaches the node primitives.
const Name = "authority"

// Domain is the concept reservation authority as a domain: its module
// (the replicated policy set, and the claim writes bound to it), the
// /v1/concepts routes over the node primitives, the --concept-policies
// flag (the `arbiter concept` command is cmd/arbiter's, over package
// client). policies seed the cluster's
// replicated policy set (nil: no seed, until --concept-policies loads
// one): see policyset.go for when a seed applies.
func Domain(policies *PolicySet) domain.Domain {
	d := &authorityDomain{reload: make(chan struct{}, 1)}
	d.policies.Store(policies)
	return domain.Domain{
		Name:     Name,
		Module:   Module,
		Requires: []string{nodes.Name},
		Routes:   d.routes,
		Flags:    d.flags,
		Load:     d.load,
		Start:    d.start,
	}
}

type authorityDomain struct {
	// policies is the node's seed: proposed at start and after each
	// reload, and by a reserve that finds the cluster without a set.
	policies atomic.Pointer[PolicySet]
	file     string
	reload   chan struct{} // one pending reload is enough: it reads the latest
	mu       sync.Mutex    // one seeding at a time
}

func (d *authorityDomain) flags(fs *flag.FlagSet) {
	fs.StringVar(&d.file, "concept-policies", "", `JSON file of concept namespace policies, {"version": N, "policies": [{"namespace": "RMDD", "prefix": "SEARCH" (optional), "min": 1, "max": 9999, "policy_version": "2"}]} or a bare array of policies (version 0). It seeds the cluster's replicated policy set when the cluster has none, or when N is newer than the cluster's version (a change made with PUT /v1/concepts/policies takes the next version, so a restart does not undo it); which one wins is logged. Reloaded on SIGHUP.`)
}

func (d *authorityDomain) load() error {
	if d.file == "" {
		return nil
	}
	ps, err := LoadPolicyFile(d.file)
	if err != nil {
		return err
	}
	d.policies.Store(ps)
	select {
	case d.reload <- struct{}{}:
	default:
	}
	return nil
}

// start seeds the replicated set from the node's policies once a leader
// exists, and again after each reload, until ctx ends.
func (d *authorityDomain) start(ctx context.Context, h domain.Host) {
	svc := NewService(h, h, nil)
	select { // the first round reads what the start's Load stored
	case <-d.reload:
	default:
	}
	for {
		if ps := d.policies.Load(); ps != nil {
			d.seed(ctx, svc, h, ps)
		}
		select {
		case <-ctx.Done():
			return
		case <-d.reload:
		}
	}
}

// seed proposes ps, retrying while the cluster cannot take it yet (no
// leader, the command not enabled), and logs which set wins.
func (d *authorityDomain) seed(ctx context.Context, svc *Service, h domain.Host, ps *PolicySet) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var res *PoliciesResult
	err := retry.Unavailable(ctx, func(ctx context.Context) (err error) {
		res, err = svc.Seed(ctx, ps)
		return err
	})
	switch {
	case err == nil:
		logSeed(h, ps, res)
	case ctx.Err() == nil:
		h.Logger().Error("concept policies: the cluster refused this node's policies", "error", err)
	}
}

// logSeed says which set wins: this node's (the seed applied), or the
// cluster's (it had one at least as new).
func logSeed(h domain.Host, ps *PolicySet, res *PoliciesResult) {
	mine := policiesDigest(ps.Policies())
	switch {
	case res.Changed:
		h.Logger().Info("concept policies: this node's policies are now the cluster's", "version", res.Version, "digest", res.Digest, "policies", len(res.Policies))
	case res.Digest == mine:
		h.Logger().Info("concept policies: the cluster's policies are this node's", "version", res.Version, "digest", res.Digest)
	default:
		h.Logger().Warn("concept policies: the cluster's replicated policies win over this node's (not newer)",
			"cluster_version", res.Version, "cluster_digest", res.Digest, "cluster_source", res.Source,
			"node_version", ps.Version(), "node_digest", mine)
	}
}

// routes serve the authority as an in-server adapter: it checks the
// caller's tenant and role itself, then reaches the raw node primitives
// under its adapter name. The policy set is read by anyone authenticated
// and replaced by admins, as themselves.
func (d *authorityDomain) routes(h domain.Host) []domain.Route {
	a := h.Adapter(Name)
	svc := func() *Service { return NewService(a, a, d.policies.Load()) }
	admin := NewService(h, h, nil)
	return []domain.Route{
		domain.Endpoint[ReserveRequest, ReserveResult]{Method: http.MethodPost, Path: "/v1/concepts/reserve", Access: domain.Authenticated,
			Call: func(ctx context.Context, req ReserveRequest) (*ReserveResult, error) {
				return svc().Reserve(ctx, req)
			}, Status: reserveStatus, Statuses: reserveStatuses, Errors: domain.ResultInDetail}.Route(),
		domain.Endpoint[ReserveNextRequest, ReserveResult]{Method: http.MethodPost, Path: "/v1/concepts/reserve-next", Access: domain.Authenticated,
			Call: func(ctx context.Context, req ReserveNextRequest) (*ReserveResult, error) {
				return svc().ReserveNextNumeric(ctx, req)
			}, Status: reserveStatus, Statuses: reserveStatuses, Errors: domain.ResultInDetail}.Route(),
		domain.Post("/v1/concepts/transition", domain.Authenticated, func(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
			return svc().Transition(ctx, req)
		}),
		domain.Endpoint[getQuery, Record]{Method: http.MethodGet, Path: "/v1/concepts/get", Access: domain.Authenticated,
			Call: func(ctx context.Context, q getQuery) (*Record, error) {
				return svc().Get(ctx, q.ConceptID, q.TenantRef)
			}}.Route(),
		domain.Endpoint[listQuery, RecordPage]{Method: http.MethodGet, Path: "/v1/concepts/list", Access: domain.Authenticated,
			Call: func(ctx context.Context, q listQuery) (*RecordPage, error) {
				limit, err := domain.IntParam("limit", q.Limit, 1, nodes.MaxLabelPage)
				if err != nil {
					return nil, err
				}
				return svc().List(ctx, ListRequest{TenantRef: q.TenantRef, After: q.After, Limit: limit})
			}}.Route(),
		domain.Endpoint[policiesQuery, PoliciesResult]{Method: http.MethodGet, Path: "/v1/concepts/policies", Access: domain.Authenticated,
			Call: func(ctx context.Context, q policiesQuery) (*PoliciesResult, error) {
				return admin.Policies(ctx, q.Consistency)
			}}.Route(),
		domain.Endpoint[PoliciesRequest, PoliciesResult]{Method: http.MethodPut, Path: "/v1/concepts/policies", Access: domain.Admin,
			Call: admin.SetPolicies, Errors: domain.ResultInDetail}.Route(),
	}
}

// reserveStatus is 201 for a claim this call made (created or reclaimed)
// and 200 for a replay of the same request.
func reserveStatus(res *ReserveResult) int {
	if res.Replayed {
		return http.StatusOK
	}
	return http.StatusCreated
}

// reserveStatuses are the statuses reserveStatus answers.
var reserveStatuses = []int{http.StatusCreated, http.StatusOK}

// The query parameters of the GET routes.
type (
	getQuery struct {
		ConceptID string `query:"concept_id"`
		TenantRef string `query:"tenant_ref"`
	}
	listQuery struct {
		TenantRef string `query:"tenant_ref"`
		After     string `query:"after"`
		Limit     string `query:"limit" type:"integer"`
	}
	policiesQuery struct {
		Consistency fsm.Consistency `query:"consistency"`
	}
)
