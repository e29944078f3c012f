package cluster

import (
	"context"
	"net/http"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The capacity routes: each decodes its request DTO, calls the capacity
// service over this node and answers 200 with the result, or the error
// of a denial with the result that explains it in error.detail.result.

func (n *Node) capacity() *capacity.Service { return capacity.NewService(n, n) }

// capacityRoute adapts one service call to a route.
func capacityRoute[Req any, Res any](call func(context.Context, Req) (*Res, error)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decodeJSON(w, r, &req); err != nil {
			writeError(w, err)
			return
		}
		res, err := call(r.Context(), req)
		if err != nil {
			if e := errs.From(err); res != nil && e.Detail != nil {
				detailed := *e
				detailed.Detail = map[string]any{"decision": e.Detail["decision"], "result": res}
				err = &detailed
			}
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

func (n *Node) capacityRoutes(handle func(string, func(http.ResponseWriter, *http.Request))) {
	handle("POST /v1/capacity/acquire", capacityRoute(func(ctx context.Context, req capacity.AcquireRequest) (*capacity.AcquireResult, error) {
		return n.capacity().Acquire(ctx, req)
	}))
	handle("POST /v1/capacity/renew", capacityRoute(func(ctx context.Context, req capacity.LeasesRequest) (*capacity.LeasesResult, error) {
		return n.capacity().Renew(ctx, req)
	}))
	handle("POST /v1/capacity/release", capacityRoute(func(ctx context.Context, req capacity.LeasesRequest) (*capacity.LeasesResult, error) {
		return n.capacity().Release(ctx, req)
	}))
	handle("POST /v1/capacity/reclaim", capacityRoute(func(ctx context.Context, req capacity.ReclaimRequest) (*capacity.ReclaimResult, error) {
		return n.capacity().Reclaim(ctx, req)
	}))
	handle("POST /v1/capacity/cells", capacityRoute(func(ctx context.Context, req capacity.UpdateCellRequest) (*capacity.UpdateCellResult, error) {
		return n.capacity().UpdateCell(ctx, req)
	}))
	handle("POST /v1/capacity/status", capacityRoute(func(ctx context.Context, req capacity.ReadRequest) (*capacity.ReadResult, error) {
		return n.capacity().Status(ctx, req, fsm.Linearizable)
	}))
	handle("POST /v1/capacity/reconcile", capacityRoute(func(ctx context.Context, req capacity.ReadRequest) (*capacity.ReadResult, error) {
		return n.capacity().Reconcile(ctx, req, fsm.Linearizable)
	}))
}
