package authority

import (
	"context"
	"flag"
	"net/http"
	"sync/atomic"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/nodes"
)

// Name is the domain's name; it is also the adapter name under which the
// authority reaches the node primitives.
const Name = "authority"

// Domain is the concept reservation authority as a domain: the
// /v1/concepts routes over the node primitives (it owns no state of its
// own), the --concept-policies flag and the `arbiter concept` command.
// policies is the starting policy set (nil: none, every reserve refused
// as matching no policy, until --concept-policies loads one).
func Domain(policies *PolicySet) domain.Domain {
	d := &authorityDomain{}
	d.policies.Store(policies)
	return domain.Domain{
		Name:     Name,
		Requires: []string{nodes.Name},
		Routes:   d.routes,
		Flags:    d.flags,
		Load:     d.load,
		CLI:      cli(),
	}
}

type authorityDomain struct {
	// policies only shape requests before they are proposed, so nodes
	// may be given new ones one at a time (SIGHUP reloads the file).
	policies atomic.Pointer[PolicySet]
	file     string
}

func (d *authorityDomain) flags(fs *flag.FlagSet) {
	fs.StringVar(&d.file, "concept-policies", "", `JSON file of concept namespace policies: [{"namespace":"RMDD","min":1,"max":9999,"policy_version":"2"}] (reloaded on SIGHUP)`)
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
	return nil
}

// routes serve the authority as an in-server adapter: it checks the
// caller's tenant and role itself, then reaches the raw node primitives
// under its adapter name.
func (d *authorityDomain) routes(h domain.Host) []domain.Route {
	a := h.Adapter(Name)
	svc := func() *Service { return NewService(a, a, d.policies.Load()) }
	return []domain.Route{
		domain.Post("/v1/concepts/reserve", domain.Authenticated, func(ctx context.Context, req ReserveRequest) (*ReserveResult, error) {
			return svc().Reserve(ctx, req)
		}, reserveStatus),
		domain.Post("/v1/concepts/reserve-next", domain.Authenticated, func(ctx context.Context, req ReserveNextRequest) (*ReserveResult, error) {
			return svc().ReserveNextNumeric(ctx, req)
		}, reserveStatus),
		domain.Post("/v1/concepts/transition", domain.Authenticated, func(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
			return svc().Transition(ctx, req)
		}, nil),
		domain.Get("/v1/concepts/get", domain.Authenticated, []string{"concept_id", "tenant_ref"}, func(ctx context.Context, p domain.Params) (*Record, error) {
			return svc().Get(ctx, p.String("concept_id"), p.String("tenant_ref"))
		}),
		domain.Get("/v1/concepts/list", domain.Authenticated, []string{"tenant_ref", "after", "limit"}, func(ctx context.Context, p domain.Params) (*RecordPage, error) {
			limit, err := p.Int("limit", 1, nodes.MaxLabelPage)
			if err != nil {
				return nil, err
			}
			return svc().List(ctx, ListRequest{TenantRef: p.String("tenant_ref"), After: p.String("after"), Limit: limit})
		}),
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
