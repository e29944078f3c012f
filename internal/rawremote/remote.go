package rawremote

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/rawwire"
	arblog "github.com/arbiterhq/arbiter/log"
)

// Remote is a raw HTTP client of a cluster implementing fsm.Proposer and
// fsm.Reader over the msgpack wire (POST /v1/commands, /v1/queries), so
// that a domain package's own service code runs against a cluster
// elsewhere: for tests, the bench and clustertest, not for embedders
// (they use package client). It spreads calls over the given API addresses and
// moves on to the next one when a node cannot be reached; whichever node it
// reaches forwards to the leader. The principal is the one the server
// authenticates, never one set on the client's context.
type Remote struct {
	bases   []string
	client  *http.Client
	timeout time.Duration
	next    atomic.Uint32
	// require, if set, is what every Propose needs the cluster to
	// enable (WithRequire); required is set once a node confirmed it.
	require  []string
	required atomic.Bool
}

var _ domain.Conn = (*Remote)(nil)

// New returns a client of the nodes at addrs (host:port or base URLs).
func New(addrs ...string) *Remote {
	r := &Remote{client: &http.Client{Transport: rawwire.NewPeerTransport()}, timeout: 30 * time.Second}
	for _, a := range addrs {
		if !strings.Contains(a, "://") {
			a = "http://" + a
		}
		r.bases = append(r.bases, strings.TrimRight(a, "/"))
	}
	return r
}

// WithHTTPClient replaces the HTTP client (for TLS or custom transports).
func (r *Remote) WithHTTPClient(c *http.Client) *Remote {
	r.client = c
	return r
}

// WithToken authenticates every call with a principal's bearer token.
func (r *Remote) WithToken(token string) *Remote {
	base := r.client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	r.client = &http.Client{Transport: bearerTransport{base: base, token: token}, Timeout: r.client.Timeout}
	return r
}

// bearerTransport adds a principal's bearer token to every request.
type bearerTransport struct {
	base  http.RoundTripper
	token string
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// WithTimeout sets the bound of a call whose context has no deadline.
func (r *Remote) WithTimeout(d time.Duration) *Remote {
	r.timeout = d
	return r
}

// WithRequire makes the remote check, before it submits its first
// command, that a node is ready and the cluster enables every command
// names lists (Ready); until a check passes, each command is refused
// with the check's error (unavailable, naming what is missing) and is not
// sent. Names are as /readyz?require= takes them: "capacity.acquire",
// "workitem.submit@2", "projection".
func (r *Remote) WithRequire(names ...string) *Remote {
	r.require = names
	r.required.Store(false)
	return r
}

// Ready asks the nodes' /readyz, with the commands require names, one
// after another, and is nil as soon as one answers that it is ready.
// Otherwise it returns the last node's answer: unavailable saying why
// (Detail["missing"] lists the required commands the cluster does not
// enable), or invalid for a malformed name. Call it before submitting
// work: a cluster that lacks a command the caller needs is an
// incompatible deployment.
func (r *Remote) Ready(ctx context.Context, require ...string) error {
	if len(r.bases) == 0 {
		return errs.New(errs.CodeInvalid, "remote has no addresses")
	}
	path := "/readyz"
	if len(require) > 0 {
		path += "?require=" + url.QueryEscape(strings.Join(require, ","))
	}
	ctx, cancel := r.bound(ctx, r.timeout)
	defer cancel()
	var err error
	for range r.bases { // each node once
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, r.pick()+path, nil); err != nil {
			return errs.Errorf(errs.CodeInvalid, "%v", err)
		}
		if err = rawwire.DoJSON(r.client, req, nil); err == nil || errs.CodeOf(err) == errs.CodeInvalid || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// Propose submits cmd through one of the nodes.
func (r *Remote) Propose(ctx context.Context, cmd arblog.Command) (*fsm.Response, error) {
	if len(r.require) > 0 && !r.required.Load() {
		if err := r.Ready(ctx, r.require...); err != nil {
			return nil, err
		}
		r.required.Store(true)
	}
	body, err := arblog.Encode(cmd)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode command: %v", err)
	}
	reply, err := r.call(ctx, "/v1/commands", body)
	if err != nil {
		return nil, errs.AdviseRetry(err, cmd.IdemKey)
	}
	if reply.Err != nil {
		return nil, errs.AdviseRetry(reply.Err, cmd.IdemKey)
	}
	if reply.Response == nil {
		return nil, errs.AdviseRetry(errs.Unknown("empty reply"), cmd.IdemKey)
	}
	return reply.Response, nil
}

// Query runs q through one of the nodes.
func (r *Remote) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	body, err := arblog.Marshal(q)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode query: %v", err)
	}
	reply, err := r.call(ctx, "/v1/queries", body)
	if err != nil {
		return nil, err
	}
	if reply.Err != nil {
		return nil, reply.Err
	}
	return reply.Result, nil
}

// Status returns the status of the first node that answers.
func (r *Remote) Status(ctx context.Context) (*cluster.Status, error) {
	var s cluster.Status
	if err := r.CallJSON(ctx, http.MethodGet, "/v1/cluster/status", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Capabilities returns the cluster's enabled command set (as its leader
// holds it) and what the answering node's binary serves.
func (r *Remote) Capabilities(ctx context.Context) (*fsm.CapabilitiesView, error) {
	var v fsm.CapabilitiesView
	if err := r.CallJSON(ctx, http.MethodGet, "/v1/cluster/capabilities", nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Require fails with unavailable, naming what is missing, unless the
// cluster enables need (for a domain's own set: its client's Require, or
// domain.Served). Call it before submitting work, so that an incompatible
// deployment is found before anything is half done.
func (r *Remote) Require(ctx context.Context, need fsm.Capabilities) error {
	return fsm.Require(ctx, r, need)
}

// CallJSON sends body as JSON (nil: none) to path with method and decodes
// a 2xx answer into out (nil: ignored); an error answer becomes its
// *errs.Error. It moves to the next node only while a node cannot be
// reached: once one may have received the request, its answer (or
// failure) is final. It makes Remote a domain.Conn.
func (r *Remote) CallJSON(ctx context.Context, method, path string, body, out any) error {
	if len(r.bases) == 0 {
		return errs.New(errs.CodeInvalid, "remote has no addresses")
	}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return errs.Errorf(errs.CodeInvalid, "encode: %v", err)
		}
	}
	ctx, cancel := r.bound(ctx, r.timeout)
	defer cancel()
	var err error
	for range r.bases {
		var req *http.Request
		if req, err = http.NewRequestWithContext(ctx, method, r.pick()+path, bytes.NewReader(raw)); err != nil {
			return errs.Errorf(errs.CodeInvalid, "%v", err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if err = rawwire.DoJSON(r.client, req, out); err == nil || !rawwire.Retryable(err) {
			return err
		}
	}
	return err
}

// call posts body to path on one node after another until one is reached.
// Only failures to connect move on: once a request may have been received,
// its error is returned (with an unknown outcome for writes).
func (r *Remote) call(ctx context.Context, path string, body []byte) (*rawwire.Reply, error) {
	if len(r.bases) == 0 {
		return nil, errs.New(errs.CodeInvalid, "remote has no addresses")
	}
	ctx, cancel := r.bound(ctx, r.timeout)
	defer cancel()
	var last error
	for range r.bases {
		var reply rawwire.Reply
		err := rawwire.PostMsgpack(ctx, r.client, r.pick()+path, body, &reply)
		if err == nil {
			return &reply, nil
		}
		last = err
		if !rawwire.Retryable(err) {
			return nil, err
		}
	}
	return nil, last
}

func (r *Remote) pick() string {
	return r.bases[int(r.next.Add(1)-1)%len(r.bases)]
}

// bound bounds a call whose context has no deadline by d.
func (r *Remote) bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
