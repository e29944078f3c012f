package cluster

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
)

// ConceptClient is the concept reservation authority over a cluster's
// HTTP API (the /v1/concepts routes), for programs that do not embed a
// node. The nodes bind requests to their own policies. It implements
// authority.Authority, so a ConceptReservationService can project from it.
type ConceptClient struct {
	remote *Remote
}

var _ authority.Authority = (*ConceptClient)(nil)

// NewConceptClient returns a client of the nodes at addrs.
func NewConceptClient(addrs ...string) *ConceptClient {
	return &ConceptClient{remote: NewRemote(addrs...)}
}

// WithToken authenticates every call with a principal's bearer token.
func (c *ConceptClient) WithToken(token string) *ConceptClient {
	c.remote.WithToken(token)
	return c
}

// WithHTTPClient replaces the HTTP client (for TLS).
func (c *ConceptClient) WithHTTPClient(h *http.Client) *ConceptClient {
	c.remote.WithHTTPClient(h)
	return c
}

// Authoritative reports true: the cluster decides.
func (c *ConceptClient) Authoritative() bool { return true }

func (c *ConceptClient) Reserve(ctx context.Context, req authority.ReserveRequest) (*authority.ReserveResult, error) {
	var out authority.ReserveResult
	if err := c.post(ctx, "/v1/concepts/reserve", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *ConceptClient) ReserveNextNumeric(ctx context.Context, req authority.ReserveNextRequest) (*authority.ReserveResult, error) {
	var out authority.ReserveResult
	if err := c.post(ctx, "/v1/concepts/reserve-next", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *ConceptClient) Transition(ctx context.Context, req authority.TransitionRequest) (*authority.TransitionResult, error) {
	var out authority.TransitionResult
	if err := c.post(ctx, "/v1/concepts/transition", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *ConceptClient) Get(ctx context.Context, conceptID, tenantRef string) (*authority.Record, error) {
	q := url.Values{"concept_id": {conceptID}}
	if tenantRef != "" {
		q.Set("tenant_ref", tenantRef)
	}
	var out authority.Record
	if err := c.get(ctx, "/v1/concepts/get?"+q.Encode(), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *ConceptClient) List(ctx context.Context, req authority.ListRequest) (*authority.RecordPage, error) {
	q := url.Values{"tenant_ref": {req.TenantRef}}
	if req.After != "" {
		q.Set("after", req.After)
	}
	if req.Limit != 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	var out authority.RecordPage
	if err := c.get(ctx, "/v1/concepts/list?"+q.Encode(), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// post tries each node in turn while a node cannot be reached; once one
// may have received the request, its answer (or failure) is final.
func (c *ConceptClient) post(ctx context.Context, path string, body, out any) error {
	return c.each(ctx, func(ctx context.Context, base string) error {
		return postJSONWith(ctx, c.remote.client, base+path, body, out)
	})
}

func (c *ConceptClient) get(ctx context.Context, path string, out any) error {
	return c.each(ctx, func(ctx context.Context, base string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return errs.Errorf(errs.CodeInvalid, "%v", err)
		}
		return doJSON(c.remote.client, req, out)
	})
}

func (c *ConceptClient) each(ctx context.Context, call func(context.Context, string) error) error {
	if len(c.remote.bases) == 0 {
		return errs.New(errs.CodeInvalid, "concept client has no addresses")
	}
	ctx, cancel := c.remote.bound(ctx, c.remote.timeout)
	defer cancel()
	var err error
	for range c.remote.bases {
		if err = call(ctx, c.remote.pick()); err == nil || !retryable(err) {
			break
		}
	}
	return authority.FromCluster(err)
}
