package workitem

import (
	"context"
	"net/http"

	"github.com/arbiterhq/arbiter/domain"
)

// Name is the domain's name.
const Name = "workitem"

// Domain is work-item admission as a domain: the module, the
// /v1/workitems routes (any authenticated principal; the module checks
// tenant and role) and the `arbiter workitem` command.
func Domain() domain.Domain {
	return domain.Domain{Name: Name, Module: Module, Routes: routes, CLI: cli()}
}

func routes(h domain.Host) []domain.Route {
	s := NewService(h, h)
	return []domain.Route{
		// The two admission routes take bodies up to MaxRequestBytes (4
		// MiB), above the host's 1 MiB default: see submitHandler.
		{Method: http.MethodPost, Path: "/v1/workitems/submit", Access: domain.Authenticated, Handler: submitHandler(s.Submit, func(r *SubmitResult) bool { return r.Replayed })},
		{Method: http.MethodPost, Path: "/v1/workitems/submit-batch", Access: domain.Authenticated, Handler: submitHandler(s.SubmitBatch, func(r *BatchResult) bool { return r.Replayed })},
		domain.Post("/v1/workitems/claim", domain.Authenticated, s.Claim, nil),
		domain.Post("/v1/workitems/complete", domain.Authenticated, s.Complete, nil),
		domain.Post("/v1/workitems/cancel", domain.Authenticated, s.Cancel, nil),
		domain.Get("/v1/workitems/get", domain.Authenticated, []string{"tenant_ref", "work_item_id", "consistency"},
			func(ctx context.Context, p domain.Params) (*ItemResult, error) {
				c, err := p.Consistency()
				if err != nil {
					return nil, err
				}
				return s.Get(ctx, GetRequest{TenantRef: p.String("tenant_ref"), WorkItemID: p.String("work_item_id")}, c)
			}),
		domain.Get("/v1/workitems/list", domain.Authenticated, []string{"tenant_ref", "graph_ref", "status", "after", "limit", "consistency"},
			func(ctx context.Context, p domain.Params) (*ListResult, error) {
				c, err := p.Consistency()
				if err != nil {
					return nil, err
				}
				limit, err := p.Int("limit", 1, MaxPage)
				if err != nil {
					return nil, withField(err, "limit")
				}
				return s.List(ctx, ListRequest{TenantRef: p.String("tenant_ref"), GraphRef: p.String("graph_ref"),
					Status: p.String("status"), After: p.String("after"), Limit: limit}, c)
			}),
	}
}
