package workitem

import (
	"context"
	"net/http"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
)

// Name is the domain's name.
const Name = "workitem"

// Domain is work-item admission and host resource reservation as a
// domain: the module, the /v1/workitems routes (any authenticated
// principal; the module checks tenant and role, and the profile set
// takes an admin) and the --reservation-profiles flag. The `arbiter
// workitem` command is the binary's (cmd/arbiter), over package client.
func Domain() domain.Domain {
	l := newProfileLoader()
	return domain.Domain{Name: Name, Module: Module, Routes: routes, Flags: l.flags, Load: l.load, Start: l.start}
}

func routes(h domain.Host) []domain.Route {
	s := NewService(h, h)
	return append(admissionRoutes(s), reservationRoutes(s)...)
}

func admissionRoutes(s *Service) []domain.Route {
	return []domain.Route{
		// The two admission routes take bodies up to MaxRequestBytes (4
		// MiB), above the host's 1 MiB default: see submitHandler.
		{Method: http.MethodPost, Path: "/v1/workitems/submit", Access: domain.Authenticated, Handler: submitHandler(s.Submit, func(r *SubmitResult) bool { return r.Replayed })},
		{Method: http.MethodPost, Path: "/v1/workitems/submit-batch", Access: domain.Authenticated, Handler: submitHandler(s.SubmitBatch, func(r *BatchResult) bool { return r.Replayed })},
		post("/v1/workitems/claim", s.Claim, nil),
		post("/v1/workitems/complete", s.Complete, nil),
		post("/v1/workitems/cancel", s.Cancel, nil),
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

func reservationRoutes(s *Service) []domain.Route {
	return []domain.Route{
		post("/v1/workitems/hosts", s.PutHost, func(r *HostResult) int {
			if r.Created {
				return http.StatusCreated
			}
			return http.StatusOK
		}),
		post("/v1/workitems/hosts/telemetry", s.ReportTelemetry, nil),
		{Method: http.MethodPut, Path: "/v1/workitems/profiles", Access: domain.Admin, Handler: jsonHandler(s.SetProfiles, nil)},
		domain.Get("/v1/workitems/profiles", domain.Authenticated, []string{"consistency"},
			func(ctx context.Context, p domain.Params) (*ProfilesResult, error) {
				c, err := p.Consistency()
				if err != nil {
					return nil, err
				}
				return s.Profiles(ctx, c)
			}),
		post("/v1/workitems/reserve", s.Reserve, nil),
		post("/v1/workitems/release", s.Release, nil),
		post("/v1/workitems/reclaim", s.Reclaim, nil),
		post("/v1/workitems/reservations/query", func(ctx context.Context, req QueryRequest) (*QueryResult, error) {
			return s.Query(ctx, req, fsm.Linearizable)
		}, nil),
		post("/v1/workitems/extension", s.RewriteExtension, nil),
	}
}
