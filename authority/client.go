package authority

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
)

// Client is the concept reservation authority over a cluster's HTTP API
// (the /v1/concepts routes) over a domain.Conn. A program that embeds no
// node uses package client's Concepts instead. The cluster binds requests
// to its replicated policy set. It implements Authority, so a ConceptReservationService
// can project from it.
type Client struct {
	conn domain.Conn
}

var _ Authority = (*Client)(nil)

// NewClient returns a client over conn.
func NewClient(conn domain.Conn) *Client { return &Client{conn: conn} }

// Authoritative reports true: the cluster decides.
func (c *Client) Authoritative() bool { return true }

func (c *Client) Reserve(ctx context.Context, req ReserveRequest) (*ReserveResult, error) {
	return call[ReserveResult](ctx, c, http.MethodPost, "/v1/concepts/reserve", req)
}

func (c *Client) ReserveNextNumeric(ctx context.Context, req ReserveNextRequest) (*ReserveResult, error) {
	return call[ReserveResult](ctx, c, http.MethodPost, "/v1/concepts/reserve-next", req)
}

func (c *Client) Transition(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
	return call[TransitionResult](ctx, c, http.MethodPost, "/v1/concepts/transition", req)
}

func (c *Client) Get(ctx context.Context, conceptID, tenantRef string) (*Record, error) {
	q := url.Values{"concept_id": {conceptID}}
	if tenantRef != "" {
		q.Set("tenant_ref", tenantRef)
	}
	return call[Record](ctx, c, http.MethodGet, "/v1/concepts/get?"+q.Encode(), nil)
}

func (c *Client) List(ctx context.Context, req ListRequest) (*RecordPage, error) {
	q := url.Values{"tenant_ref": {req.TenantRef}}
	if req.After != "" {
		q.Set("after", req.After)
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	return call[RecordPage](ctx, c, http.MethodGet, "/v1/concepts/list?"+q.Encode(), nil)
}

// Policies reads the cluster's replicated policy set.
func (c *Client) Policies(ctx context.Context) (*PoliciesResult, error) {
	return call[PoliciesResult](ctx, c, http.MethodGet, "/v1/concepts/policies", nil)
}

// SetPolicies replaces the cluster's replicated policy set (admins).
func (c *Client) SetPolicies(ctx context.Context, req PoliciesRequest) (*PoliciesResult, error) {
	return call[PoliciesResult](ctx, c, http.MethodPut, "/v1/concepts/policies", req)
}

// call makes one call; every failure that means the cluster could not
// decide matches ErrAuthorityUnavailable.
func call[Res any](ctx context.Context, c *Client, method, path string, body any) (*Res, error) {
	var out Res
	if err := c.conn.CallJSON(ctx, method, path, body, &out); err != nil {
		return nil, fromCluster(err)
	}
	return &out, nil
}

// Require fails with unavailable, naming what is missing, unless the
// cluster enables the node primitives the authority's routes use.
func (c *Client) Require(ctx context.Context) error {
	return fsm.Require(ctx, c.conn, nodes.Needed())
}
