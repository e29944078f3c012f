package capacity

import (
	"context"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
)

// Name is the domain's name.
const Name = "capacity"

// Domain is capacity leases as a domain: the module, the /v1/capacity
// routes (any authenticated principal; the module checks tenant, role and
// owner) and the `arbiter capacity` command.
func Domain() domain.Domain {
	return domain.Domain{Name: Name, Module: Module, Routes: routes, CLI: cli()}
}

// routes: each decodes its request DTO, calls the service over the host
// and answers 200 with the result, or the error of a denial with the
// result that explains it in error.detail.result.
func routes(h domain.Host) []domain.Route {
	s := NewService(h, h)
	read := func(f func(context.Context, ReadRequest, fsm.Consistency) (*ReadResult, error)) func(context.Context, ReadRequest) (*ReadResult, error) {
		return func(ctx context.Context, req ReadRequest) (*ReadResult, error) { return f(ctx, req, fsm.Linearizable) }
	}
	return []domain.Route{
		domain.Post("/v1/capacity/acquire", domain.Authenticated, s.Acquire, nil),
		domain.Post("/v1/capacity/renew", domain.Authenticated, s.Renew, nil),
		domain.Post("/v1/capacity/release", domain.Authenticated, s.Release, nil),
		domain.Post("/v1/capacity/reclaim", domain.Authenticated, s.Reclaim, nil),
		domain.Post("/v1/capacity/cells", domain.Authenticated, s.UpdateCell, nil),
		domain.Post("/v1/capacity/status", domain.Authenticated, read(s.Status), nil),
		domain.Post("/v1/capacity/reconcile", domain.Authenticated, read(s.Reconcile), nil),
	}
}
