package capacity

import (
	"context"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// Name is the domain's name.
const Name = "capacity"

// Domain is capacity leases as a domain: the module, the /v1/capacity
// routes (any authenticated principal; the module checks tenant, role and
// owner). The `arbiter capacity` command is the binary's (cmd/arbiter).
func Domain() domain.Domain {
	return domain.Domain{Name: Name, Module: Module, Routes: routes}
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
		domain.Post("/v1/capacity/acquire", domain.Authenticated, onWire(s.Acquire)),
		domain.Post("/v1/capacity/renew", domain.Authenticated, onWire(s.Renew)),
		domain.Post("/v1/capacity/release", domain.Authenticated, onWire(s.Release)),
		domain.Post("/v1/capacity/reclaim", domain.Authenticated, onWire(s.Reclaim)),
		domain.Post("/v1/capacity/cells", domain.Authenticated, onWire(s.UpdateCell)),
		domain.Post("/v1/capacity/status", domain.Authenticated, onWire(read(s.Status))),
		domain.Post("/v1/capacity/reconcile", domain.Authenticated, onWire(read(s.Reconcile))),
	}
}

// request is a request DTO: it says which schema it speaks.
type request interface{ schemaVersion() string }

func (r AcquireRequest) schemaVersion() string    { return r.SchemaVersion }
func (r LeasesRequest) schemaVersion() string     { return r.SchemaVersion }
func (r ReclaimRequest) schemaVersion() string    { return r.SchemaVersion }
func (r ReadRequest) schemaVersion() string       { return r.SchemaVersion }
func (r UpdateCellRequest) schemaVersion() string { return r.SchemaVersion }

// onWire requires schema_version of a request that came over HTTP. The Go
// API fills in SchemaVersion for a caller compiled against this package;
// a body names the schema it was written for, so that a server that
// speaks another one one day refuses it instead of guessing.
func onWire[Req request, Res any](call func(context.Context, Req) (*Res, error)) func(context.Context, Req) (*Res, error) {
	return func(ctx context.Context, req Req) (*Res, error) {
		if req.schemaVersion() == "" {
			return nil, errs.Errorf(errs.CodeInvalid, "schema_version is required (%q)", SchemaVersion)
		}
		return call(ctx, req)
	}
}
