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
		// MiB), above the host's 1 MiB default, and answer 201 when they
		// admitted and 200 when they replayed.
		submitRoute("/v1/workitems/submit", s.Submit, func(r *SubmitResult) bool { return r.Replayed }),
		submitRoute("/v1/workitems/submit-batch", s.SubmitBatch, func(r *BatchResult) bool { return r.Replayed }),
		post("/v1/workitems/claim", s.Claim),
		post("/v1/workitems/complete", s.Complete),
		post("/v1/workitems/cancel", s.Cancel),
		domain.Endpoint[getParams, ItemResult]{Method: http.MethodGet, Path: "/v1/workitems/get", Access: domain.Authenticated,
			Call: func(ctx context.Context, q getParams) (*ItemResult, error) {
				return s.Get(ctx, GetRequest{TenantRef: q.TenantRef, WorkItemID: q.WorkItemID}, q.Consistency)
			}}.Route(),
		domain.Endpoint[listParams, ListResult]{Method: http.MethodGet, Path: "/v1/workitems/list", Access: domain.Authenticated,
			Call: func(ctx context.Context, q listParams) (*ListResult, error) {
				limit, err := domain.IntParam("limit", q.Limit, 1, MaxPage)
				if err != nil {
					return nil, withField(err, "limit")
				}
				return s.List(ctx, ListRequest{TenantRef: q.TenantRef, GraphRef: q.GraphRef,
					Status: q.Status, After: q.After, Limit: limit}, q.Consistency)
			}}.Route(),
	}
}

func reservationRoutes(s *Service) []domain.Route {
	return []domain.Route{
		domain.Endpoint[PutHostRequest, HostResult]{Method: http.MethodPost, Path: "/v1/workitems/hosts", Access: domain.Authenticated,
			Call: s.PutHost, DecodeError: decodeError, Status: func(r *HostResult) int {
				if r.Created {
					return http.StatusCreated
				}
				return http.StatusOK
			}, Statuses: []int{http.StatusCreated, http.StatusOK}}.Route(),
		domain.Endpoint[hostsParams, HostPage]{Method: http.MethodGet, Path: "/v1/workitems/hosts", Access: domain.Authenticated,
			Call: func(ctx context.Context, q hostsParams) (*HostPage, error) {
				limit, err := domain.IntParam("limit", q.Limit, 1, MaxQueryPage)
				if err != nil {
					return nil, withField(err, "limit")
				}
				return s.Hosts(ctx, HostsRequest{TenantRef: q.TenantRef, After: q.After, Limit: limit}, q.Consistency)
			}}.Route(),
		post("/v1/workitems/hosts/telemetry", s.ReportTelemetry),
		domain.Endpoint[ProfilesRequest, ProfilesResult]{Method: http.MethodPut, Path: "/v1/workitems/profiles", Access: domain.Admin,
			Call: s.SetProfiles, DecodeError: decodeError}.Route(),
		domain.Endpoint[consistencyParams, ProfilesResult]{Method: http.MethodGet, Path: "/v1/workitems/profiles", Access: domain.Authenticated,
			Call: func(ctx context.Context, q consistencyParams) (*ProfilesResult, error) {
				return s.Profiles(ctx, q.Consistency)
			}}.Route(),
		post("/v1/workitems/reserve", s.Reserve),
		post("/v1/workitems/release", s.Release),
		post("/v1/workitems/reclaim", s.Reclaim),
		post("/v1/workitems/reservations/query", func(ctx context.Context, req QueryRequest) (*QueryResult, error) {
			return s.Query(ctx, req, fsm.Linearizable)
		}),
		post("/v1/workitems/extension", s.RewriteExtension),
	}
}

// The query parameters of the GET routes.
type (
	getParams struct {
		TenantRef   string          `query:"tenant_ref"`
		WorkItemID  string          `query:"work_item_id"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	listParams struct {
		TenantRef   string          `query:"tenant_ref"`
		GraphRef    string          `query:"graph_ref"`
		Status      string          `query:"status"`
		After       string          `query:"after"`
		Limit       string          `query:"limit" type:"integer"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	hostsParams struct {
		TenantRef   string          `query:"tenant_ref"`
		After       string          `query:"after"`
		Limit       string          `query:"limit" type:"integer"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	consistencyParams struct {
		Consistency fsm.Consistency `query:"consistency"`
	}
)
