package cluster

import (
	"context"
	"net/http"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/fsm"
)

// The capacity routes: each decodes its request DTO, calls the capacity
// service over this node and answers 200 with the result, or the error
// of a denial with the result that explains it in error.detail.result
// (see jsonRoute).

func (n *Node) capacity() *capacity.Service { return capacity.NewService(n, n) }

func (n *Node) capacityRoutes(handle func(string, func(http.ResponseWriter, *http.Request))) {
	c := n.capacity()
	handle("POST /v1/capacity/acquire", jsonRoute(c.Acquire, nil))
	handle("POST /v1/capacity/renew", jsonRoute(c.Renew, nil))
	handle("POST /v1/capacity/release", jsonRoute(c.Release, nil))
	handle("POST /v1/capacity/reclaim", jsonRoute(c.Reclaim, nil))
	handle("POST /v1/capacity/cells", jsonRoute(c.UpdateCell, nil))
	handle("POST /v1/capacity/status", jsonRoute(func(ctx context.Context, req capacity.ReadRequest) (*capacity.ReadResult, error) {
		return c.Status(ctx, req, fsm.Linearizable)
	}, nil))
	handle("POST /v1/capacity/reconcile", jsonRoute(func(ctx context.Context, req capacity.ReadRequest) (*capacity.ReadResult, error) {
		return c.Reconcile(ctx, req, fsm.Linearizable)
	}, nil))
}
