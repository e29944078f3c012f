package nodes

import (
	"context"

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
	c := NewClient(h, h)
	return []domain.Route{
		domain.Post("/v1/nodes/create", domain.Admin, c.CreateIfAbsent, nil),
		domain.Post("/v1/nodes/cas", domain.Admin, c.CompareAndSet, nil),
		domain.Get("/v1/nodes/get", domain.Admin, []string{"node_id", "consistency"}, func(ctx context.Context, p domain.Params) (*Node, error) {
			cons, err := p.Consistency()
			if err != nil {
				return nil, err
			}
			return c.Get(ctx, p.String("node_id"), cons)
		}),
		domain.Get("/v1/nodes/by-label", domain.Admin, []string{"label", "after", "limit", "consistency"}, func(ctx context.Context, p domain.Params) (*Page, error) {
			cons, err := p.Consistency()
			if err != nil {
				return nil, err
			}
			limit, err := p.Int("limit", 1, MaxLabelPage)
			if err != nil {
				return nil, err
			}
			return c.ByLabel(ctx, LabelQuery{Label: p.String("label"), After: p.String("after"), Limit: limit}, cons)
		}),
	}
}
