package nodes

import (
	"context"
	"net/http"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
)

// Name is the domain's name.
const Name = "nodes"

// Domain is the node primitives as a domain: the module and the
// admin-only /v1/nodes routes. opts configure the module (AcceptAdapters:
// domain/builtin accepts the concept authority's adapter).
func Domain(opts ...Option) domain.Domain {
	return domain.Domain{Name: Name, Module: func() fsm.Module { return Module(opts...) }, Routes: routes}
}

func routes(h domain.Host) []domain.Route {
	c := On(h)
	return []domain.Route{
		domain.Post("/v1/nodes/create", domain.Admin, c.CreateIfAbsent),
		domain.Post("/v1/nodes/cas", domain.Admin, c.CompareAndSet),
		domain.Endpoint[getQuery, Record]{Method: http.MethodGet, Path: "/v1/nodes/get", Access: domain.Admin,
			Call: func(ctx context.Context, q getQuery) (*Record, error) { return c.Get(ctx, q.NodeID, q.Consistency) }}.Route(),
		domain.Endpoint[labelQuery, Page]{Method: http.MethodGet, Path: "/v1/nodes/by-label", Access: domain.Admin,
			Call: func(ctx context.Context, q labelQuery) (*Page, error) {
				limit, err := domain.IntParam("limit", q.Limit, 1, MaxLabelPage)
				if err != nil {
					return nil, err
				}
				return c.ByLabel(ctx, LabelQuery{Label: q.Label, After: q.After, Limit: limit}, q.Consistency)
			}}.Route(),
	}
}

// The query parameters of the GET routes.
type (
	getQuery struct {
		NodeID      string          `query:"node_id"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	labelQuery struct {
		Label       string          `query:"label"`
		After       string          `query:"after"`
		Limit       string          `query:"limit" type:"integer"`
		Consistency fsm.Consistency `query:"consistency"`
	}
)
