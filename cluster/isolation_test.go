package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/allocation"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/arbiterhq/arbiter/workitem"
)

// The isolation tests run clusters with authentication on. Principals:
//
//	admin   tenants *   role admin
//	ctl-a   tenant a    role controller
//	mem-a   tenant a    role member
//	mem-a2  tenant a    role member (a second owner in tenant a)
//	mem-b   tenant b    role member
//	read-a  tenant a    role reader
//
// Every helper here is prefixed iso so that it cannot collide with the
// helpers of other test files of the package.

// isoToken is the bearer token of a principal: distinctive, so that a test
// can look for it in logs, metrics and error bodies.
func isoToken(id string) string { return "iso-secret-token-" + id + "-5f1c0e9a" }

// isoUnknownToken is a well-formed token no registry knows.
const isoUnknownToken = "iso-secret-token-nobody-77d2b4c1"

type isoPrincipalCfg struct {
	id      string
	tenants []string
	roles   []string
}

var isoPrincipals = []isoPrincipalCfg{
	{"admin", []string{"*"}, []string{identity.RoleAdmin}},
	{"ctl-a", []string{"a"}, []string{identity.RoleController}},
	{"mem-a", []string{"a"}, []string{identity.RoleMember}},
	{"mem-a2", []string{"a"}, []string{identity.RoleMember}},
	{"mem-b", []string{"b"}, []string{identity.RoleMember}},
	{"read-a", []string{"a"}, []string{identity.RoleReader}},
}

// isoRegistry builds a registry of the named principals (all when none is
// named), each with its isoToken, plus extra configs.
func isoRegistry(t testing.TB, only []string, extra ...identity.PrincipalConfig) *identity.Registry {
	t.Helper()
	var cfgs []identity.PrincipalConfig
	for _, p := range isoPrincipals {
		if only != nil && !slices.Contains(only, p.id) {
			continue
		}
		cfgs = append(cfgs, identity.PrincipalConfig{ID: p.id, Tenants: p.tenants, Roles: p.roles, TokenSHA256: []string{identity.HashToken(isoToken(p.id))}})
	}
	reg, err := identity.NewRegistry(append(cfgs, extra...))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func isoPolicies(t testing.TB) *authority.PolicySet {
	t.Helper()
	ps, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{{Namespace: "ISO", Min: 1, Max: 9999, PolicyVersion: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// isoCluster starts a cluster with every iso principal and the ISO concept
// policy; nodes authenticate each other with the generated peer token.
func isoCluster(t *testing.T, opts clustertest.Options) *clustertest.Cluster {
	t.Helper()
	ps := isoPolicies(t)
	if opts.Principals == nil {
		opts.Principals = isoRegistry(t, nil)
	}
	configure := opts.Configure
	opts.Configure = func(i int, cfg *cluster.Config) {
		cfg.Domains = builtin.With(builtin.Options{ConceptPolicies: ps})
		if configure != nil {
			configure(i, cfg)
		}
	}
	c := clustertest.New(t, opts)
	isoSettled(t, c)
	return c
}

// isoSettled waits until the leader holds every running node's member
// metadata, so that no registration event lands in the feed later.
func isoSettled(t testing.TB, c *clustertest.Cluster) {
	t.Helper()
	ok := c.Eventually(10*time.Second, func() bool {
		l := c.Leader()
		if l < 0 {
			return false
		}
		api := map[string]string{}
		for _, m := range c.Node(l).Status().Members {
			api[m.ID] = m.APIAddr
		}
		for _, i := range c.Running() {
			if n := c.Node(i); api[n.ID()] != n.APIAddr() {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatal("the member metadata did not settle")
	}
}

// isoClient bounds every request, so that a hung server fails the test.
var isoClient = &http.Client{Timeout: 15 * time.Second}

// isoWire mirrors the msgpack reply of /v1/commands, /v1/queries and the
// internal routes.
type isoWire struct {
	Response *fsm.Response `msgpack:"res,omitempty"`
	Result   []byte        `msgpack:"out,omitempty"`
	Err      *errs.Error   `msgpack:"err,omitempty"`
}

// isoReply is an HTTP answer with the error code it carries: from the JSON
// error body, or from inside a msgpack reply (whose HTTP status is 200).
type isoReply struct {
	status int
	header http.Header
	body   []byte
	code   errs.Code // "" when no error
	wire   *isoWire  // decoded msgpack reply
}

func (r isoReply) String() string {
	return fmt.Sprintf("%d %s %.300s", r.status, r.code, r.body)
}

// isoBody encodes a request body: raw bytes are sent as msgpack, anything
// else as JSON.
func isoBody(v any) (io.Reader, string, error) {
	switch b := v.(type) {
	case nil:
		return nil, "", nil
	case []byte:
		return bytes.NewReader(b), "application/msgpack", nil
	default:
		raw, err := json.Marshal(v)
		return bytes.NewReader(raw), "application/json", err
	}
}

// isoTry sends a request with a bearer token ("" for none) through client;
// it is safe to call from any goroutine.
func isoTry(client *http.Client, method, u, token string, body any) (isoReply, error) {
	rd, ctype, err := isoBody(body)
	if err != nil {
		return isoReply{}, err
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return isoReply{}, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return isoReply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return isoReply{}, fmt.Errorf("reading body: %w", err)
	}
	return isoParseReply(resp, raw)
}

// isoDo is isoTry that fails the test on a transport error.
func isoDo(t testing.TB, client *http.Client, method, u, token string, body any) isoReply {
	t.Helper()
	r, err := isoTry(client, method, u, token, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return r
}

func isoParse(t testing.TB, resp *http.Response, raw []byte) isoReply {
	t.Helper()
	r, err := isoParseReply(resp, raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func isoParseReply(resp *http.Response, raw []byte) (isoReply, error) {
	r := isoReply{status: resp.StatusCode, header: resp.Header, body: raw}
	switch resp.Header.Get("Content-Type") {
	case "application/msgpack":
		var w isoWire
		if err := arblog.Unmarshal(raw, &w); err != nil {
			return r, fmt.Errorf("undecodable msgpack reply: %v", err)
		}
		r.wire = &w
		switch {
		case w.Err != nil:
			r.code = w.Err.Code
		case w.Response != nil && w.Response.Err != nil:
			r.code = w.Response.Err.Code
		}
	case "application/json":
		if r.status >= 400 {
			var e struct {
				Error *errs.Error `json:"error"`
			}
			if err := json.Unmarshal(raw, &e); err != nil || e.Error == nil {
				return r, fmt.Errorf("status %d without a JSON error: %s", r.status, raw)
			}
			r.code = e.Error.Code
		}
	}
	return r, nil
}

func isoURL(c *clustertest.Cluster, i int, path string) string { return c.URL(i) + path }

// isoFeedEvent is one change-feed event as the JSON API shows it.
type isoFeedEvent struct {
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	Tenant string `json:"tenant"`
}

type isoFeedPage struct {
	Events  []isoFeedEvent `json:"events"`
	Next    uint64         `json:"next"`
	LastSeq uint64         `json:"last_seq"`
}

// isoFeed reads every event after seq as the principal with token.
func isoFeed(t testing.TB, c *clustertest.Cluster, i int, token string, after uint64, extra string) (events []isoFeedEvent, last uint64) {
	t.Helper()
	for {
		r := isoDo(t, isoClient, http.MethodGet, isoURL(c, i, fmt.Sprintf("/v1/changes?after=%d%s", after, extra)), token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("changes after %d: %s", after, r)
		}
		var p isoFeedPage
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatalf("changes: %v: %s", err, r.body)
		}
		events = append(events, p.Events...)
		last = p.LastSeq
		if p.Next == after {
			return events, last
		}
		after = p.Next
	}
}

// isoLastSeq is the newest sequence of the feed.
func isoLastSeq(t testing.TB, c *clustertest.Cluster) uint64 {
	t.Helper()
	// After a restore (or pruning) the feed starts past 0: cursor_expired
	// says where it resumes.
	r := isoDo(t, isoClient, http.MethodGet, isoURL(c, 0, "/v1/changes?after=0&limit=1"), isoToken("admin"), nil)
	if r.code == errs.CodeCursorExpired {
		var e struct {
			Error struct {
				Detail struct {
					LastSeq uint64 `json:"last_seq"`
				} `json:"detail"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Detail.LastSeq == 0 {
			t.Fatalf("cursor_expired without last_seq: %s", r)
		}
		_, last := isoFeed(t, c, 0, isoToken("admin"), e.Error.Detail.LastSeq, "")
		return last
	}
	_, last := isoFeed(t, c, 0, isoToken("admin"), 0, "&limit=1")
	return last
}

// isoDataEvents lists the events after seq, as admin sees them, other than
// membership metadata.
func isoDataEvents(t testing.TB, c *clustertest.Cluster, i int, seq uint64) []isoFeedEvent {
	t.Helper()
	events, _ := isoFeed(t, c, i, isoToken("admin"), seq, "")
	var out []isoFeedEvent
	for _, e := range events {
		// Membership events are not the refused calls' doing. (Expiries
		// would not be either: every TTL and window here outlasts the test.)
		if !strings.HasPrefix(e.Kind, "member_") {
			out = append(out, e)
		}
	}
	return out
}

// isoAdminGet is what admin reads at path on node i: status and body.
func isoAdminGet(t testing.TB, c *clustertest.Cluster, i int, path string) string {
	t.Helper()
	r := isoDo(t, isoClient, http.MethodGet, isoURL(c, i, path), isoToken("admin"), nil)
	return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body))
}

// isoCapacity reads a tenant's capacity status as admin, without its
// timestamp: the cells and leases the filters select.
func isoCapacity(t testing.TB, c *clustertest.Cluster, i int, req capacity.ReadRequest) string {
	t.Helper()
	req.SchemaVersion, req.MaxCount = capacity.SchemaVersion, 100
	r := isoDo(t, isoClient, http.MethodPost, isoURL(c, i, "/v1/capacity/status"), isoToken("admin"), req)
	if r.status != http.StatusOK {
		return r.String()
	}
	var res capacity.ReadResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(map[string]any{"cells": res.Cells, "leases": res.Leases})
	return string(out)
}

// isoAccess is the matrix's name for a route's access level.
var isoAccess = map[domain.Access]string{
	domain.Public: isoPublic, domain.Authenticated: isoPrincipal, domain.Admin: isoAdmin, domain.Peer: isoPeer,
}

// Access classes of the matrix.
const (
	isoPublic    = "public"
	isoPrincipal = "principal" // any principal; the module checks tenant and role
	isoAdmin     = "admin"
	isoPeer      = "peer"
)

// isoCase is who calls and what they must get.
type isoCase struct {
	name   string
	who    string // principal id; "" for no credential, "?" for an unknown token, "peer" for the peer token
	body   any
	status int       // exact status; 0 with success: any 2xx
	code   errs.Code // error code, also inside a msgpack reply
	ok     bool      // success: 2xx and no error in a msgpack reply
	// refused: any 4xx refusal will do (another owner in the same
	// tenant meets the module's own checks, such as a stale fence).
	refused bool
}

// isoRoute is one row of the matrix.
type isoRoute struct {
	route  string // "METHOD /path" as registered
	path   string // the path to call when route has wildcards
	query  string
	access string
	// body builds the request body for a caller (nil: no body).
	body func(who string) any
	// wrongTenant and wrongRole are the refusals specific to the route,
	// with the body each sends; valid is the allowed call.
	wrongTenant []isoCase
	wrongRole   []isoCase
	valid       isoCase
	// state is the admin view of what the route would change (nil for
	// reads); refusals must leave it as it was.
	state func(t *testing.T) string
	// node picks the node to send to (default: a follower).
	node func() int
	// after checks the valid call's effect.
	after func(t *testing.T, r isoReply)
	// noEffect: the valid call need not change the target (a join of a
	// present member, a reclaim with nothing expired).
	noEffect bool
}

// TestIsolationMatrix calls every registered route with no credential, an
// unknown token, a principal of the wrong tenant, a principal of the
// wrong role and a valid caller, and checks the status and code of each
// answer and that no refusal changed anything.
func TestIsolationMatrix(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3

	// Fixtures, made by their rightful owners.
	mustOK := func(what string, r isoReply) isoReply {
		t.Helper()
		if r.status/100 != 2 || r.code != "" {
			t.Fatalf("setup %s: %s", what, r)
		}
		return r
	}
	post := func(who, path string, body any) isoReply {
		t.Helper()
		return isoDo(t, isoClient, http.MethodPost, isoURL(c, follower, path), isoToken(who), body)
	}
	mustOK("cell-a", post("ctl-a", "/v1/capacity/cells", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "a",
		Cell: capacity.CellSpec{CellID: "cell-a", Capacities: map[string]uint64{"gpu": 100}}}))
	acquire := func(who, tenant, lease string) capacity.AcquireRequest {
		return capacity.AcquireRequest{SchemaVersion: "1", TenantRef: tenant, WorkItemID: "w-" + lease, OwnerDigest: capacity.OwnerDigest(who),
			IdempotencyKey: "k-" + lease, LeaseID: lease, TTLMs: 600_000,
			Demands: []capacity.Demand{{CellID: "cell-a", ResourceClass: "gpu", Amount: 1}}}
	}
	leaseRef := map[string]capacity.LeaseRef{}
	for _, l := range []string{"own-lease-renew", "own-lease-release"} {
		var res capacity.AcquireResult
		if err := json.Unmarshal(mustOK(l, post("mem-a", "/v1/capacity/acquire", acquire("mem-a", "a", l))).body, &res); err != nil || len(res.Leases) != 1 {
			t.Fatalf("acquire %s: %+v %v", l, res, err)
		}
		leaseRef[l] = capacity.LeaseRef{LeaseID: l, LeaseEpoch: res.Leases[0].LeaseEpoch, Fence: res.Leases[0].Fence}
	}
	reserve := func(id, tenant, request string) authority.ReserveRequest {
		return authority.ReserveRequest{ConceptID: id, TenantRef: tenant, RequestRef: request, PurposeDigest: "purpose-" + request}
	}
	var held authority.ReserveResult
	if err := json.Unmarshal(mustOK("ISO-200", post("mem-a", "/v1/concepts/reserve", reserve("ISO-200", "a", "r-200"))).body, &held); err != nil {
		t.Fatal(err)
	}
	mustOK("ISO-300", post("mem-a", "/v1/concepts/reserve", reserve("ISO-300", "a", "r-300")))
	// Work items of tenant a: one to claim, one mem-a holds (to complete),
	// one to cancel.
	wiSubmit := func(id string) workitem.SubmitRequest {
		return workitem.SubmitRequest{TenantRef: "a", GraphRef: "iso", WorkItemID: id, IdempotencyKey: "k-" + id,
			CommandDigest: "sha256:" + strings.Repeat("0", 64), Kind: id, InputRef: "in", PolicyDigest: "sha256:" + strings.Repeat("1", 64),
			CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64), MaxAttempts: 1, MaxTenantInFlight: 100}
	}
	for _, id := range []string{"iso-wi-claim", "iso-wi-done", "iso-wi-cancel"} {
		mustOK(id, post("mem-a", "/v1/workitems/submit", wiSubmit(id)))
	}
	var wiHeld workitem.ClaimResult
	if err := json.Unmarshal(mustOK("claim iso-wi-done", post("mem-a", "/v1/workitems/claim", workitem.ClaimRequest{TenantRef: "a", GraphRef: "iso",
		OwnerRef: "mem-a", WorkItemID: "iso-wi-done", TTLMs: 600_000})).body, &wiHeld); err != nil {
		t.Fatal(err)
	}
	mustOK("iso-cas", post("admin", "/v1/nodes/create", nodes.CreateRequest{NodeID: "iso-cas", Properties: map[string]any{"v": 1}}))
	mustOK("iso-get", post("admin", "/v1/nodes/create", nodes.CreateRequest{NodeID: "iso-get", Labels: []string{"iso-label"}}))
	// The restore row restores this backup, taken before the rows run:
	// what the valid calls create after it (iso-cmd) disappears.
	var early bytes.Buffer
	if err := c.Node(leader).Backup(context.Background(), &early); err != nil {
		t.Fatalf("early backup: %v", err)
	}

	// Bodies of the msgpack routes.
	encode := func(cmd arblog.Command) []byte {
		b, err := arblog.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	marshal := func(v any) []byte {
		b, err := arblog.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	createCmd := func(id string) arblog.Command {
		return arblog.Command{Type: nodes.CmdCreate, Version: 1, Payload: marshal(nodes.CreateCommand{NodeID: id})}
	}
	acquireCmd := func(who string) []byte {
		return encode(arblog.Command{Type: capacity.CmdAcquire, Version: 1, Payload: marshal(map[string]any{
			"tenant_ref": "a", "work_item_id": "w-cmd", "owner_digest": capacity.OwnerDigest(who), "lease_id": "own-lease-cmd", "ttl_ms": 600_000,
			"demands": []capacity.Demand{{CellID: "cell-a", ResourceClass: "gpu", Amount: 1}},
		})})
	}
	query := func(q fsm.Query) []byte { return marshal(q) }
	nodeGetQuery := fsm.Query{Type: nodes.QueryGet, Payload: marshal(nodes.GetQuery{NodeID: "iso-get"})}
	// An internal batch carries a command with the empty principal, which
	// the leader trusts as coming from a node.
	internalBatch := marshal(struct {
		Commands [][]byte `msgpack:"cmds"`
	}{[][]byte{encode(createCmd("iso-internal"))}})
	internalQuery := marshal(struct {
		Query     fsm.Query          `msgpack:"q"`
		Principal identity.Principal `msgpack:"p"`
	}{Query: nodeGetQuery})

	members := func(*testing.T) string {
		var ids []string
		for _, m := range c.Node(c.WaitLeader(10 * time.Second)).Status().Members {
			ids = append(ids, fmt.Sprintf("%s@%s/%s voter=%v", m.ID, m.RaftAddr, m.APIAddr, m.Voter))
		}
		slices.Sort(ids)
		return strings.Join(ids, " ")
	}
	var victim int // the follower the remove row removes
	fn := c.Node(follower)
	rejoin := cluster.JoinRequest{ID: fn.ID(), RaftAddr: fn.RaftAddr(), APIAddr: fn.APIAddr()}

	forbidden := func(who string, body any) isoCase {
		return isoCase{name: who, who: who, body: body, status: http.StatusForbidden, code: errs.CodeForbidden}
	}
	notFound := func(who string, body any) isoCase {
		return isoCase{name: who, who: who, body: body, status: http.StatusNotFound, code: errs.CodeNotFound}
	}
	// inside: a msgpack route answers 200 with the refusal in its reply.
	inside := func(who string, body any, code errs.Code) isoCase {
		return isoCase{name: who, who: who, body: body, status: http.StatusOK, code: code}
	}
	otherOwner := func(who string, body any) isoCase {
		return isoCase{name: who + " (another owner)", who: who, body: body, refused: true}
	}
	valid := func(who string, body any, status int) isoCase {
		return isoCase{name: who, who: who, body: body, status: status, ok: true}
	}
	nonAdmins := func(body func(string) any) []isoCase {
		var out []isoCase
		for _, p := range isoPrincipals {
			if p.id != "admin" {
				out = append(out, forbidden(p.id, body(p.id)))
			}
		}
		return out
	}
	everyone := func(body func(string) any) []isoCase {
		out := []isoCase{forbidden("admin", body("admin"))}
		return append(out, nonAdmins(body)...)
	}
	same := func(v any) func(string) any { return func(string) any { return v } }
	getNode := func(id string) func(*testing.T) string {
		return func(t *testing.T) string { return isoAdminGet(t, c, leader, "/v1/nodes/get?node_id="+id) }
	}
	getConcept := func(id string) func(*testing.T) string {
		return func(t *testing.T) string {
			return isoAdminGet(t, c, leader, "/v1/concepts/get?"+url.Values{"concept_id": {id}, "tenant_ref": {"a"}}.Encode())
		}
	}
	capState := func(req capacity.ReadRequest) func(*testing.T) string {
		return func(t *testing.T) string { return isoCapacity(t, c, leader, req) }
	}
	readA := func(status int) isoCase { return valid("read-a", nil, status) }

	transition := authority.TransitionRequest{ConceptID: "ISO-200", TenantRef: "a", OwnerRef: held.Record.OwnerRef,
		ReservationID: held.Record.ReservationID, Fingerprint: held.Record.Fingerprint, ExpectedFence: held.Record.Fence, Action: authority.Release}
	leases := func(lease string) func(string) any {
		return func(who string) any {
			return capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "a", OwnerDigest: capacity.OwnerDigest(who),
				Leases: []capacity.LeaseRef{leaseRef[lease]}, TTLMs: 900_000}
		}
	}
	cell := func(tenant string) capacity.UpdateCellRequest {
		return capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: tenant, Cell: capacity.CellSpec{CellID: "cell-new", Capacities: map[string]uint64{"gpu": 5}}}
	}
	readReq := capacity.ReadRequest{SchemaVersion: "1", TenantRef: "a", MaxCount: 10}
	getItem := func(id string) func(*testing.T) string {
		return func(t *testing.T) string {
			return isoAdminGet(t, c, leader, "/v1/workitems/get?tenant_ref=a&work_item_id="+id)
		}
	}
	wiBatch := workitem.BatchRequest{TenantRef: "a", GraphRef: "iso", IdempotencyKey: "k-iso-wi-batch", Requests: []workitem.SubmitRequest{wiSubmit("iso-wi-batch")}}
	wiBatch.Requests[0].IdempotencyKey = ""
	wiClaim := workitem.ClaimRequest{TenantRef: "a", GraphRef: "iso", OwnerRef: "w", WorkItemID: "iso-wi-claim", TTLMs: 600_000}
	wiDone := workitem.CompleteRequest{TenantRef: "a", WorkItemID: "iso-wi-done", Attempt: wiHeld.Attempt, Fence: wiHeld.Fence, Outcome: workitem.StatusSucceeded}
	wiCancel := workitem.CancelRequest{TenantRef: "a", WorkItemID: "iso-wi-cancel", Reason: "iso"}
	isoPolicies := authority.PoliciesRequest{Policies: []authority.ConceptNamespacePolicy{
		{Namespace: "ISO", Min: 1, Max: 9999, PolicyVersion: "1"}, {Namespace: "ISO", Prefix: "X", Min: 1, Max: 9, PolicyVersion: "x"}}}
	next := authority.ReserveNextRequest{Namespace: "ISO", From: 100, To: 110, Request: authority.ReserveRequest{TenantRef: "a", RequestRef: "r-next", PurposeDigest: "purpose-next"}}

	alloc := allocation.NewService(c.Node(leader), c.Node(leader))
	allocMust := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	actx := context.Background()
	// Allocations live for the space's window: the default (15 s) can
	// lapse while the rows run under -race, and an expiry inside a
	// refusal's window would count against it (clustertest.Unchanged).
	isoWindowMs := allocation.MaxWindow.Milliseconds()
	allocMust(alloc.PutSpace(actx, "iso", allocation.PutSpaceRequest{TenantRef: "a", Catalog: []allocation.CatalogRow{}, WindowMs: isoWindowMs}))
	for _, title := range []string{"one", "two", "three"} {
		allocMust(alloc.CreateTask(actx, "iso", allocation.CreateTaskRequest{Title: title, DeliveryMode: "result"}))
	}
	for _, p := range []string{"p-commit", "p-abort", "p-release"} {
		allocMust(alloc.Reserve(actx, "iso", allocation.ReserveRequest{ProposalID: p, Title: p, DeliveryMode: "result"}))
	}
	allocMust(alloc.Commit(actx, "iso", "p-release", allocation.CommitRequest{Winner: &allocation.Winner{Type: "issue", ID: allocation.StrID("1")}}))
	sp := "/v1/spaces/iso"
	allocWrite := func(route, path string, body any, who string, status int, wrongRole ...string) isoRoute {
		r := isoRoute{route: route, path: path, access: isoPrincipal, wrongTenant: []isoCase{forbidden("mem-b", body)}, valid: valid(who, body, status)}
		for _, w := range wrongRole {
			r.wrongRole = append(r.wrongRole, forbidden(w, body))
		}
		return r
	}
	// A read of another tenant's space answers as for a space that does
	// not exist.
	allocRead := func(route, path string, body any) isoRoute {
		return isoRoute{route: route, path: path, access: isoPrincipal, wrongTenant: []isoCase{notFound("mem-b", body)}, valid: valid("read-a", body, 200)}
	}
	allocRows := []isoRoute{
		allocWrite("PUT /v1/spaces/{slug}", sp, allocation.PutSpaceRequest{TenantRef: "a", Catalog: []allocation.CatalogRow{}, WindowMs: isoWindowMs}, "ctl-a", 200, "mem-a", "read-a"),
		allocRead("GET /v1/spaces/{slug}", sp, nil),
		allocRead("POST /v1/spaces/{slug}/bind", sp+"/bind", allocation.BindRequest{Title: "x"}),
		allocWrite("POST /v1/spaces/{slug}/tasks", sp+"/tasks", allocation.CreateTaskRequest{Title: "iso new", DeliveryMode: "result"}, "mem-a", 201, "read-a"),
		allocRead("GET /v1/spaces/{slug}/tasks", sp+"/tasks", nil),
		allocRead("GET /v1/spaces/{slug}/tasks/{id}", sp+"/tasks/1", nil),
		allocRead("GET /v1/spaces/{slug}/tasks/{id}/notes", sp+"/tasks/1/notes", nil),
		allocRead("GET /v1/spaces/{slug}/reservations", sp+"/reservations", nil),
		allocRead("GET /v1/spaces/{slug}/occupancy", sp+"/occupancy", nil),
		allocRead("GET /v1/spaces/{slug}/duplicates", sp+"/duplicates", nil),
		// The list shows each principal its tenants' spaces (another
		// tenant's list leaves iso out: allocation's TestHTTPOtherTenant).
		{route: "GET /v1/spaces", access: isoPrincipal, valid: readA(200),
			after: func(t *testing.T, r isoReply) {
				if !bytes.Contains(r.body, []byte(`"slug":"iso"`)) {
					t.Errorf("read-a's list of spaces lacks iso: %s", r.body)
				}
			}},
		allocWrite("POST /v1/spaces/{slug}/tasks/{id}/transition", sp+"/tasks/1/transition", allocation.TransitionRequest{Action: "claim"}, "mem-a", 200, "read-a"),
		allocWrite("POST /v1/spaces/{slug}/tasks/{id}/hold", sp+"/tasks/2/hold", allocation.HoldRequest{Hold: true}, "ctl-a", 200, "mem-a", "read-a"),
		allocWrite("POST /v1/spaces/{slug}/tasks/{id}/supersede", sp+"/tasks/3/supersede", allocation.SupersedeRequest{SurvivingTask: 1, Reason: "dup"}, "ctl-a", 200, "mem-a", "read-a"),
		allocWrite("POST /v1/spaces/{slug}/tasks/{id}/notes", sp+"/tasks/1/notes", map[string]any{"kind": "post_review_note", "criterion_index": nil, "body": "b", "delivery_mode": "result"}, "mem-a", 201, "read-a"),
		allocWrite("POST /v1/spaces/{slug}/windows", sp+"/windows", allocation.WindowRequest{Proposals: []allocation.Proposal{{ProposalID: "w", Title: "iso window", DeliveryMode: "result"}}}, "mem-a", 200, "read-a"),
		allocWrite("POST /v1/spaces/{slug}/reservations", sp+"/reservations", allocation.ReserveRequest{ProposalID: "p-new", Title: "iso res", DeliveryMode: "result"}, "mem-a", 201, "read-a"),
		allocWrite("POST /v1/spaces/{slug}/reservations/{proposal_id}/commit", sp+"/reservations/p-commit/commit", allocation.CommitRequest{Winner: &allocation.Winner{Type: "issue", ID: allocation.StrID("2")}}, "ctl-a", 200, "mem-a", "read-a"),
		allocWrite("POST /v1/spaces/{slug}/reservations/{proposal_id}/abort", sp+"/reservations/p-abort/abort", nil, "ctl-a", 200, "mem-a", "read-a"),
		allocWrite("POST /v1/spaces/{slug}/reservations/{proposal_id}/release", sp+"/reservations/p-release/release", nil, "ctl-a", 200, "mem-a", "read-a"),
	}

	rows := []isoRoute{
		{route: "POST /v1/nodes/create", access: isoAdmin, body: same(nodes.CreateRequest{NodeID: "iso-create"}),
			valid: valid("admin", nodes.CreateRequest{NodeID: "iso-create"}, 200), state: getNode("iso-create")},
		{route: "POST /v1/nodes/cas", access: isoAdmin,
			body:  same(nodes.CASRequest{NodeID: "iso-cas", Conditions: map[string]any{"v": 1}, Updates: map[string]any{"v": 2}}),
			valid: valid("admin", nodes.CASRequest{NodeID: "iso-cas", Conditions: map[string]any{"v": 1}, Updates: map[string]any{"v": 2}}, 200),
			state: getNode("iso-cas")},
		{route: "GET /v1/nodes/get", query: "?node_id=iso-get", access: isoAdmin, body: same(nil), valid: valid("admin", nil, 200)},
		{route: "GET /v1/nodes/by-label", query: "?label=iso-label", access: isoAdmin, body: same(nil), valid: valid("admin", nil, 200)},
		{route: "POST /v1/concepts/reserve", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", reserve("ISO-1", "a", "r-1"))},
			wrongRole:   []isoCase{forbidden("read-a", reserve("ISO-1", "a", "r-1"))},
			valid:       valid("mem-a", reserve("ISO-1", "a", "r-1"), 201), state: getConcept("ISO-1")},
		{route: "POST /v1/concepts/reserve-next", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", next)},
			wrongRole:   []isoCase{forbidden("read-a", next)},
			valid:       valid("mem-a", next, 201), state: getConcept("ISO-100")},
		{route: "POST /v1/concepts/transition", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", transition)},
			wrongRole:   []isoCase{forbidden("read-a", transition), otherOwner("mem-a2", transition)},
			valid:       valid("mem-a", transition, 200), state: getConcept("ISO-200")},
		{route: "GET /v1/concepts/get", query: "?concept_id=ISO-300&tenant_ref=a", access: isoPrincipal,
			wrongTenant: []isoCase{notFound("mem-b", nil)}, valid: readA(200)},
		{route: "GET /v1/concepts/list", query: "?tenant_ref=a", access: isoPrincipal,
			wrongTenant: []isoCase{notFound("mem-b", nil)}, valid: readA(200),
			after: func(t *testing.T, r isoReply) {
				if !bytes.Contains(r.body, []byte(`"ISO-300"`)) {
					t.Errorf("read-a's list of tenant a lacks ISO-300: %s", r.body)
				}
			}},
		// The replicated policy set: anyone reads it, admins replace it
		// (a set that still covers every ISO id the rows use).
		{route: "PUT /v1/concepts/policies", access: isoAdmin, body: same(isoPolicies),
			valid: valid("admin", isoPolicies, 200), state: func(t *testing.T) string { return isoAdminGet(t, c, leader, "/v1/concepts/policies") }},
		{route: "GET /v1/concepts/policies", access: isoPrincipal, valid: readA(200)},
		{route: "POST /v1/capacity/acquire", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", acquire("mem-b", "a", "own-lease-acq"))},
			wrongRole:   []isoCase{forbidden("read-a", acquire("read-a", "a", "own-lease-acq"))},
			valid:       valid("mem-a", acquire("mem-a", "a", "own-lease-acq"), 200),
			state:       capState(capacity.ReadRequest{TenantRef: "a", CellID: "cell-a", LeaseID: "own-lease-acq"})},
		{route: "POST /v1/capacity/renew", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", leases("own-lease-renew")("mem-b"))},
			wrongRole:   []isoCase{forbidden("read-a", leases("own-lease-renew")("read-a")), otherOwner("mem-a2", leases("own-lease-renew")("mem-a2"))},
			valid:       valid("mem-a", leases("own-lease-renew")("mem-a"), 200),
			state:       capState(capacity.ReadRequest{TenantRef: "a", LeaseID: "own-lease-renew"})},
		{route: "POST /v1/capacity/release", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", leases("own-lease-release")("mem-b"))},
			wrongRole:   []isoCase{forbidden("read-a", leases("own-lease-release")("read-a")), otherOwner("mem-a2", leases("own-lease-release")("mem-a2"))},
			valid:       valid("mem-a", leases("own-lease-release")("mem-a"), 200),
			state:       capState(capacity.ReadRequest{TenantRef: "a", CellID: "cell-a", LeaseID: "own-lease-release"})},
		{route: "POST /v1/capacity/reclaim", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "a", MaxCount: 10})},
			wrongRole:   []isoCase{forbidden("read-a", capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "a", MaxCount: 10})},
			valid:       valid("mem-a", capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "a", MaxCount: 10}, 200),
			state:       capState(capacity.ReadRequest{TenantRef: "a"}), noEffect: true},
		{route: "POST /v1/capacity/cells", access: isoPrincipal,
			// A controller of tenant a may not shape tenant b's cells.
			wrongTenant: []isoCase{forbidden("ctl-a", cell("b"))},
			wrongRole:   []isoCase{forbidden("mem-a", cell("a")), forbidden("read-a", cell("a"))},
			valid:       valid("ctl-a", cell("a"), 200),
			state: func(t *testing.T) string {
				return isoCapacity(t, c, leader, capacity.ReadRequest{TenantRef: "a", CellID: "cell-new"}) + " " +
					isoCapacity(t, c, leader, capacity.ReadRequest{TenantRef: "b", CellID: "cell-new"})
			}},
		{route: "POST /v1/capacity/status", access: isoPrincipal,
			wrongTenant: []isoCase{notFound("mem-b", readReq)}, valid: valid("read-a", readReq, 200)},
		{route: "POST /v1/capacity/reconcile", access: isoPrincipal,
			wrongTenant: []isoCase{notFound("mem-b", readReq)}, valid: valid("read-a", readReq, 200)},
		{route: "POST /v1/workitems/submit", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", wiSubmit("iso-wi-new"))},
			wrongRole:   []isoCase{forbidden("read-a", wiSubmit("iso-wi-new"))},
			valid:       valid("mem-a", wiSubmit("iso-wi-new"), 201), state: getItem("iso-wi-new")},
		{route: "POST /v1/workitems/submit-batch", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", wiBatch)},
			wrongRole:   []isoCase{forbidden("read-a", wiBatch)},
			valid:       valid("mem-a", wiBatch, 201), state: getItem("iso-wi-batch")},
		{route: "POST /v1/workitems/claim", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", wiClaim)},
			wrongRole:   []isoCase{forbidden("read-a", wiClaim)},
			valid:       valid("mem-a", wiClaim, 200), state: getItem("iso-wi-claim")},
		{route: "POST /v1/workitems/complete", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", wiDone)},
			wrongRole:   []isoCase{forbidden("read-a", wiDone), otherOwner("mem-a2", wiDone)},
			valid:       valid("mem-a", wiDone, 200), state: getItem("iso-wi-done")},
		{route: "POST /v1/workitems/cancel", access: isoPrincipal,
			wrongTenant: []isoCase{forbidden("mem-b", wiCancel)},
			wrongRole:   []isoCase{forbidden("read-a", wiCancel)},
			valid:       valid("mem-a", wiCancel, 200), state: getItem("iso-wi-cancel")},
		{route: "GET /v1/workitems/get", query: "?tenant_ref=a&work_item_id=iso-wi-claim", access: isoPrincipal,
			wrongTenant: []isoCase{notFound("mem-b", nil)}, valid: readA(200)},
		{route: "GET /v1/workitems/list", query: "?tenant_ref=a&graph_ref=iso", access: isoPrincipal,
			wrongTenant: []isoCase{notFound("mem-b", nil)}, valid: readA(200),
			after: func(t *testing.T, r isoReply) {
				if !bytes.Contains(r.body, []byte(`"iso-wi-claim"`)) {
					t.Errorf("read-a's list of tenant a lacks iso-wi-claim: %s", r.body)
				}
			}},
		{route: "GET /v1/changes", access: isoPrincipal, valid: valid("mem-b", nil, 200)},
		// Any principal may ask who it is; the answer is its own.
		{route: "GET /v1/auth/whoami", access: isoPrincipal, valid: readA(200),
			after: func(t *testing.T, r isoReply) {
				var w cluster.Whoami
				if err := json.Unmarshal(r.body, &w); err != nil || w.Principal != "read-a" || w.OwnerDigest != capacity.OwnerDigest("read-a") ||
					!slices.Equal(w.Tenants, []string{"a"}) || !slices.Equal(w.Roles, []string{identity.RoleReader}) || w.Credential != "bearer_token" {
					t.Errorf("whoami as read-a: %s (%v)", r.body, err)
				}
			}},
		{route: "GET /v1/cluster/capabilities", access: isoPrincipal, valid: readA(200),
			after: func(t *testing.T, r isoReply) {
				var v fsm.CapabilitiesView
				if err := json.Unmarshal(r.body, &v); err != nil || !v.Gated || !v.Enabled.HasDomain("capacity") {
					t.Errorf("capabilities: %s (%v)", r.body, err)
				}
			}},
		// The API document: any principal (domain/openapi).
		{route: "GET /v1/openapi.json", access: isoPrincipal, valid: readA(200),
			after: func(t *testing.T, r isoReply) {
				if !strings.Contains(string(r.body), `"openapi":"3.1.0"`) {
					t.Errorf("openapi.json: %.200s", r.body)
				}
			}},
		{route: "GET /v1/cluster/status", access: isoPrincipal, valid: readA(200),
			after: func(t *testing.T, r isoReply) {
				var s cluster.Status
				if err := json.Unmarshal(r.body, &s); err != nil || s.AuthMode != "principals" {
					t.Errorf("status auth_mode %q (%v), want principals: %s", s.AuthMode, err, r.body)
				}
			}},
		{route: "GET /v1/cluster/state-hash", access: isoAdmin, body: same(nil), valid: valid("admin", nil, 200)},
		{route: "GET /v1/debug/bundle", access: isoAdmin, body: same(nil), valid: valid("admin", nil, 200)},
		{route: "POST /v1/cluster/join", access: isoAdmin,
			body:  same(cluster.JoinRequest{ID: "rogue", RaftAddr: "rogue", APIAddr: "127.0.0.1:1"}),
			valid: valid("admin", rejoin, 200), state: members, noEffect: true},
		{route: "POST /v1/commands", access: isoPrincipal,
			// A member may not reach the raw node API, nor acquire in
			// another tenant, through the generic command route.
			wrongTenant: []isoCase{inside("mem-b", acquireCmd("mem-b"), errs.CodeForbidden)},
			wrongRole:   []isoCase{inside("mem-a", encode(createCmd("iso-cmd")), errs.CodeForbidden), inside("read-a", acquireCmd("read-a"), errs.CodeForbidden)},
			valid:       valid("admin", encode(createCmd("iso-cmd")), 200),
			state: func(t *testing.T) string {
				return getNode("iso-cmd")(t) + " " + isoCapacity(t, c, leader, capacity.ReadRequest{TenantRef: "a", LeaseID: "own-lease-cmd"})
			}},
		{route: "POST /v1/queries", access: isoPrincipal,
			wrongTenant: []isoCase{inside("mem-b", query(fsm.Query{Type: capacity.QueryStatus, Payload: marshal(map[string]any{"tenant_ref": "a", "max_count": 10})}), errs.CodeNotFound)},
			wrongRole:   []isoCase{inside("mem-a", query(nodeGetQuery), errs.CodeForbidden)},
			valid:       valid("mem-a", query(fsm.Query{Type: fsm.QueryChanges, Payload: marshal(fsm.ChangesRequest{})}), 200)},
		{route: "POST /v1/internal/apply", access: isoPeer, body: same(internalBatch),
			valid: valid("peer", internalBatch, 200), state: getNode("iso-internal"), node: func() int { return c.WaitLeader(10 * time.Second) },
			after: func(t *testing.T, r isoReply) {
				var batch struct {
					Replies []isoWire `msgpack:"replies"`
				}
				if err := arblog.Unmarshal(r.wire.Result, &batch); err != nil || len(batch.Replies) != 1 || batch.Replies[0].Response == nil || batch.Replies[0].Response.Err != nil {
					t.Errorf("peer batch: %+v %v", batch, err)
				}
			}},
		{route: "POST /v1/internal/query", access: isoPeer, body: same(internalQuery),
			valid: valid("peer", internalQuery, 200), node: func() int { return c.WaitLeader(10 * time.Second) }},
		{route: "GET /healthz", access: isoPublic, valid: valid("", nil, 200)},
		{route: "GET /readyz", access: isoPublic, valid: valid("", nil, 200)},
		{route: "GET /metrics", access: isoPrincipal, valid: readA(200)},
		{route: "GET /v1/cluster/snapshot", access: isoAdmin, body: same(nil), valid: valid("admin", nil, 200),
			node: func() int { return c.WaitLeader(10 * time.Second) },
			after: func(t *testing.T, r isoReply) {
				if _, err := c.Node(leader).FSM().InspectSnapshot(bytes.NewReader(r.body)); err != nil {
					t.Errorf("the snapshot route's body is not a valid backup: %v", err)
				}
			}},
		// The valid call hands the leadership to another voter.
		{route: "POST /v1/cluster/transfer-leader", access: isoAdmin,
			body:  func(string) any { return cluster.TransferRequest{} },
			valid: valid("admin", nil, 200), state: func(*testing.T) string { return c.Node(c.WaitLeader(10 * time.Second)).ID() },
			node: func() int { return c.WaitLeader(10 * time.Second) }},
		// Next to last: the valid call rolls the state back to early.
		{route: "POST /v1/cluster/restore", access: isoAdmin, body: same(early.Bytes()), valid: valid("admin", early.Bytes(), 200),
			state: getNode("iso-cmd"), node: func() int { return c.WaitLeader(10 * time.Second) }},
		// Last: the valid call removes a member.
		{route: "POST /v1/cluster/remove", access: isoAdmin,
			body:  func(string) any { return cluster.RemoveRequest{ID: fmt.Sprintf("n%d", victim+1)} },
			valid: valid("admin", nil, 200), state: members,
			node: func() int {
				l := c.WaitLeader(10 * time.Second)
				victim = (l + 1) % 3
				return l
			}},
	}

	rows = append(allocRows, rows...)
	// The projection and reservation rows run before restore and remove,
	// which end the table.
	rows = slices.Insert(rows, len(rows)-2, isoProjectionRows(t, c, follower)...)
	rows = slices.Insert(rows, len(rows)-2, isoReservationRows(t, c, follower)...)
	rows = slices.Insert(rows, len(rows)-2, isoPrincipalRows(t, c, leader)...)

	// Every route a node serves (its own and every domain's) has exactly
	// one row with the node's own access level, and every row names one:
	// a route added without a row fails here.
	var table, registered []string
	for _, r := range rows {
		table = append(table, r.route+" "+r.access)
	}
	for _, r := range c.Node(0).Routes() {
		registered = append(registered, r.Pattern+" "+isoAccess[r.Access])
	}
	slices.Sort(table)
	if len(registered) < 20 {
		t.Fatalf("the node serves only %d routes (%v)", len(registered), registered)
	}
	if !slices.Equal(table, registered) {
		t.Fatalf("the matrix does not cover the routes with their access:\nserved %v\nmatrix %v", registered, table)
	}

	for _, row := range rows {
		t.Run(strings.ReplaceAll(row.route, "/", "_"), func(t *testing.T) {
			method, path, _ := strings.Cut(row.route, " ")
			if row.path != "" {
				path = row.path
			}
			node := follower
			if row.node != nil {
				node = row.node()
			}
			if c.Node(node) == nil {
				t.Fatalf("node %d is not running", node)
			}
			if row.path != "" {
				path = row.path
			}
			target := isoURL(c, node, path+row.query)
			body := row.body
			if body == nil {
				body = func(string) any { return row.valid.body }
			}
			var cases []isoCase
			if row.access == isoPublic {
				cases = append(cases,
					isoCase{name: "no credential", status: 200, ok: true},
					isoCase{name: "unknown token", who: "?", status: 200, ok: true})
			} else {
				cases = append(cases,
					isoCase{name: "no credential", body: body(""), status: http.StatusUnauthorized, code: errs.CodeUnauthorized},
					isoCase{name: "unknown token", who: "?", body: body("?"), status: http.StatusUnauthorized, code: errs.CodeUnauthorized})
			}
			switch row.access {
			case isoAdmin:
				cases = append(cases, nonAdmins(body)...)
			case isoPeer:
				cases = append(cases, everyone(body)...)
			case isoPrincipal:
				cases = append(cases, row.wrongTenant...)
				cases = append(cases, row.wrongRole...)
			}
			var before string
			if row.state != nil {
				before = row.state(t)
			}
			seq := isoLastSeq(t, c)
			for _, tc := range cases {
				if tc.ok || tc.status/100 == 2 {
					isoCheck(t, tc, isoSend(t, method, target, c, tc))
					continue
				}
				c.Unchanged(t, fmt.Sprintf("%s as %q (%s)", row.route, tc.who, tc.name), func() {
					isoCheck(t, tc, isoSend(t, method, target, c, tc))
				})
			}
			if row.state != nil {
				if after := row.state(t); after != before {
					t.Errorf("refused calls changed the target:\nbefore %s\nafter  %s", before, after)
				}
			}
			if ev := isoDataEvents(t, c, leader, seq); len(ev) > 0 {
				t.Errorf("refused calls appended events: %+v", ev)
			}

			v := row.valid
			if v.body == nil && row.body != nil && method == http.MethodPost {
				v.body = row.body(v.who)
			}
			r := isoSend(t, method, target, c, v)
			isoCheck(t, v, r)
			if row.after != nil && r.status/100 == 2 {
				row.after(t, r)
			}
			if row.state != nil && !row.noEffect && r.status/100 == 2 {
				// An allowed write changes its target.
				ok := c.Eventually(5*time.Second, func() bool { return row.state(t) != before })
				if !ok {
					t.Errorf("the allowed call did not change the target: %s", before)
				}
			}
		})
	}
}

// isoSend makes one matrix call.
func isoSend(t *testing.T, method, target string, c *clustertest.Cluster, tc isoCase) isoReply {
	t.Helper()
	token := ""
	switch tc.who {
	case "":
	case "?":
		token = isoUnknownToken
	case "peer":
		token = c.PeerToken
	default:
		token = isoToken(tc.who)
	}
	return isoDo(t, isoClient, method, target, token, tc.body)
}

func isoCheck(t *testing.T, tc isoCase, r isoReply) {
	t.Helper()
	switch {
	case tc.refused:
		if r.status/100 != 4 || r.code == "" || r.status == http.StatusUnauthorized {
			t.Errorf("%s: got %s, want a refusal", tc.name, r)
		}
	case tc.ok:
		if r.status/100 != 2 || (tc.status != 0 && r.status != tc.status) || r.code != "" {
			t.Errorf("%s: got %s, want success %d", tc.name, r, tc.status)
		}
	case r.status != tc.status || r.code != tc.code:
		t.Errorf("%s: got %s, want %d %s", tc.name, r, tc.status, tc.code)
	}
	if r.status == http.StatusUnauthorized && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("%s: 401 without a Bearer challenge (WWW-Authenticate %q)", tc.name, r.header.Get("WWW-Authenticate"))
	}
}

// A principal never sees another tenant's records: gets and lists answer
// as for records that do not exist, capacity reads of another tenant are
// not found, and the change feed shows none of its events.
func TestIsolationTenantScopedReads(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	do := func(who, method, path string, body any) isoReply {
		t.Helper()
		return isoDo(t, isoClient, method, isoURL(c, follower, path), isoToken(who), body)
	}
	seq := isoLastSeq(t, c)

	// Tenant a: a concept, a cell and a lease.
	r := do("mem-a", http.MethodPost, "/v1/concepts/reserve", authority.ReserveRequest{ConceptID: "ISO-500", TenantRef: "a", RequestRef: "secret-request-a", PurposeDigest: "secret-purpose-a"})
	if r.status != http.StatusCreated {
		t.Fatalf("reserve: %s", r)
	}
	var rec authority.ReserveResult
	if err := json.Unmarshal(r.body, &rec); err != nil {
		t.Fatal(err)
	}
	if r := do("ctl-a", http.MethodPost, "/v1/capacity/cells", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "a",
		Cell: capacity.CellSpec{CellID: "cell-secret-a", Capacities: map[string]uint64{"gpu": 4}}}); r.status != 200 {
		t.Fatalf("cell: %s", r)
	}
	if r := do("mem-a", http.MethodPost, "/v1/capacity/acquire", capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "a", WorkItemID: "w-secret",
		OwnerDigest: capacity.OwnerDigest("mem-a"), IdempotencyKey: "k-secret", LeaseID: "own-lease-secret-a", TTLMs: 600_000,
		Demands: []capacity.Demand{{CellID: "cell-secret-a", ResourceClass: "gpu", Amount: 1}}}); r.status != 200 {
		t.Fatalf("acquire: %s", r)
	}
	// Tenant b has a cell of the same name.
	if r := do("admin", http.MethodPost, "/v1/capacity/cells", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "b",
		Cell: capacity.CellSpec{CellID: "cell-secret-a", Capacities: map[string]uint64{"cpu": 1}}}); r.status != 200 {
		t.Fatalf("cell b: %s", r)
	}
	secrets := []string{"secret-request-a", "secret-purpose-a", rec.Record.OwnerRef, rec.Record.ReservationID, rec.Record.Fingerprint, "own-lease-secret-a", "w-secret"}

	// same404 requires that the answer about an existing record of
	// tenant a equals the answer about a record that does not exist.
	same404 := func(what string, existing, missing isoReply, replace [2]string) {
		t.Helper()
		if existing.status != http.StatusNotFound || existing.code != errs.CodeNotFound {
			t.Errorf("%s: %s, want 404 not_found", what, existing)
		}
		want := strings.ReplaceAll(string(missing.body), replace[1], replace[0])
		if string(existing.body) != want {
			t.Errorf("%s: the answer differs from the one for a missing record, so it reveals the record:\nexisting %s\nmissing  %s", what, existing.body, missing.body)
		}
	}
	getURL := func(id, tenant string) string {
		q := url.Values{"concept_id": {id}}
		if tenant != "" {
			q.Set("tenant_ref", tenant)
		}
		return "/v1/concepts/get?" + q.Encode()
	}
	for _, tenant := range []string{"", "a", "b"} {
		same404("mem-b get ISO-500 tenant "+tenant,
			do("mem-b", http.MethodGet, getURL("ISO-500", tenant), nil), do("mem-b", http.MethodGet, getURL("ISO-501", tenant), nil), [2]string{"ISO-500", "ISO-501"})
	}
	if r := do("read-a", http.MethodGet, getURL("ISO-500", ""), nil); r.status != 200 {
		t.Errorf("read-a get of its tenant's concept: %s", r)
	}
	same404("mem-b list tenant a", do("mem-b", http.MethodGet, "/v1/concepts/list?tenant_ref=a", nil),
		do("mem-b", http.MethodGet, "/v1/concepts/list?tenant_ref=zz", nil), [2]string{`\"a\"`, `\"zz\"`})
	if r := do("mem-b", http.MethodGet, "/v1/concepts/list?tenant_ref=b", nil); r.status != 200 || bytes.Contains(r.body, []byte("ISO-500")) {
		t.Errorf("mem-b list of its own tenant: %s", r)
	}
	for _, route := range []string{"/v1/capacity/status", "/v1/capacity/reconcile"} {
		ask := func(tenant, lease string) isoReply {
			return do("mem-b", http.MethodPost, route, capacity.ReadRequest{SchemaVersion: "1", TenantRef: tenant, LeaseID: lease, MaxCount: 10})
		}
		same404("mem-b "+route+" tenant a", ask("a", "own-lease-secret-a"), ask("zz", "own-lease-secret-a"), [2]string{`\"a\"`, `\"zz\"`})
		// Its own tenant: tenant b's cell of the same name, never tenant
		// a's lease.
		if r := ask("b", "own-lease-secret-a"); r.status != 200 || bytes.Contains(r.body, []byte("gpu")) || bytes.Contains(r.body, []byte(`"lease_id":"own-lease-secret-a"`)) {
			t.Errorf("mem-b %s of tenant b: %s", route, r)
		}
	}
	// Writes naming tenant a's records from tenant b find nothing, and say
	// so exactly as for records that do not exist.
	nowMs := regexp.MustCompile(`"now_ms":\d+`)
	sameAnswer := func(what string, existing, missing isoReply, replace [2]string) {
		t.Helper()
		if existing.status/100 == 2 {
			t.Errorf("%s: %s, want a refusal", what, existing)
		}
		e := nowMs.ReplaceAllString(string(existing.body), "")
		m := strings.ReplaceAll(nowMs.ReplaceAllString(string(missing.body), ""), replace[1], replace[0])
		if existing.status != missing.status || e != m {
			t.Errorf("%s: the answer differs from the one for a missing record, so it reveals the record:\nexisting %s\nmissing  %s", what, existing, missing)
		}
	}
	transition := func(id string) isoReply {
		return do("mem-b", http.MethodPost, "/v1/concepts/transition", authority.TransitionRequest{ConceptID: id, TenantRef: "b",
			ReservationID: rec.Record.ReservationID, Fingerprint: rec.Record.Fingerprint, ExpectedFence: rec.Record.Fence, Action: authority.Release})
	}
	sameAnswer("mem-b transition of ISO-500 in tenant b", transition("ISO-500"), transition("ISO-501"), [2]string{"ISO-500", "ISO-501"})
	for _, path := range []string{"/v1/capacity/renew", "/v1/capacity/release"} {
		leaseOp := func(lease string) isoReply {
			return do("mem-b", http.MethodPost, path, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "b", OwnerDigest: capacity.OwnerDigest("mem-b"),
				Leases: []capacity.LeaseRef{{LeaseID: lease, LeaseEpoch: 1, Fence: 1}}})
		}
		sameAnswer("mem-b "+path+" of tenant a's lease id in tenant b", leaseOp("own-lease-secret-a"), leaseOp("own-lease-secret-z"), [2]string{"own-lease-secret-a", "own-lease-secret-z"})
	}

	// The generic query route is scoped the same way.
	q, _ := arblog.Marshal(fsm.Query{Type: capacity.QueryReconcile, Payload: arblog.MustMarshal(map[string]any{"tenant_ref": "a", "max_count": 10})})
	if r := do("mem-b", http.MethodPost, "/v1/queries", q); r.code != errs.CodeNotFound {
		t.Errorf("mem-b reconcile of tenant a through /v1/queries: %s", r)
	}

	// A conflicting reserve from tenant b learns that the id is taken
	// (ids are global) but none of tenant a's private refs.
	r = do("mem-b", http.MethodPost, "/v1/concepts/reserve", authority.ReserveRequest{ConceptID: "ISO-500", TenantRef: "b", RequestRef: "r-b", PurposeDigest: "p-b"})
	if r.status != http.StatusConflict {
		t.Errorf("mem-b reserve of a held id: %s", r)
	}
	for _, s := range append(secrets, `"tenant_ref"`, `"owner_ref"`) {
		if s != "" && bytes.Contains(r.body, []byte(s)) {
			t.Errorf("the conflict answer to mem-b reveals %q: %s", s, r.body)
		}
	}

	// The change feed: read-a sees tenant a's capacity events; mem-b,
	// through every path, sees none of them.
	aEvents, _ := isoFeed(t, c, follower, isoToken("read-a"), seq, "")
	sawA := false
	for _, e := range aEvents {
		sawA = sawA || e.Key == "own-lease-secret-a"
		if e.Tenant != "a" {
			t.Errorf("read-a sees an event of tenant %q: %+v", e.Tenant, e)
		}
	}
	if !sawA {
		t.Fatalf("read-a does not see its own tenant's lease in the feed: %+v", aEvents)
	}
	for _, extra := range []string{"", "&consistency=stale", "&limit=1"} {
		bEvents, _ := isoFeed(t, c, follower, isoToken("mem-b"), seq, extra)
		for _, e := range bEvents {
			if e.Tenant != "b" {
				t.Errorf("mem-b (%q) sees an event of tenant %q: %+v", extra, e.Tenant, e)
			}
		}
	}
	var page fsm.ChangesPage
	q, _ = arblog.Marshal(fsm.Query{Type: fsm.QueryChanges, Payload: arblog.MustMarshal(fsm.ChangesRequest{After: seq})})
	r = do("mem-b", http.MethodPost, "/v1/queries", q)
	if r.wire == nil || r.code != "" || arblog.Unmarshal(r.wire.Result, &page) != nil {
		t.Fatalf("mem-b changes through /v1/queries: %s", r)
	}
	for _, e := range page.Events {
		if e.Tenant != "b" {
			t.Errorf("mem-b sees an event of tenant %q through /v1/queries: %+v", e.Tenant, e)
		}
	}
	// A long poll of mem-b is not woken into showing tenant a's events.
	start := isoLastSeq(t, c)
	done := make(chan isoReply, 1)
	go func() {
		r, err := isoTry(isoClient, http.MethodGet, isoURL(c, follower, fmt.Sprintf("/v1/changes?after=%d&wait_ms=3000", start)), isoToken("mem-b"), nil)
		if err != nil {
			r.body = []byte(err.Error())
		}
		done <- r
	}()
	time.Sleep(200 * time.Millisecond)
	if r := do("mem-a", http.MethodPost, "/v1/capacity/release", capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "a", OwnerDigest: capacity.OwnerDigest("mem-a"),
		Leases: []capacity.LeaseRef{{LeaseID: "own-lease-secret-a", LeaseEpoch: 1, Fence: 1}}}); r.status != 200 {
		t.Logf("release (for the long poll): %s", r)
	}
	lp := <-done
	for _, s := range secrets {
		if bytes.Contains(lp.body, []byte(s)) {
			t.Errorf("mem-b's long poll shows %q: %s", s, lp.body)
		}
	}
}

// The raw node API is for admins: a member reaches it neither over HTTP
// nor through /v1/commands and /v1/queries, whatever principal or adapter
// it writes into the envelope or puts on its own context.
func TestIsolationRawNodeAPIAndForgedEnvelope(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	remote := func(who string) *rawremote.Remote {
		return rawremote.New(c.Node(follower).APIAddr()).WithToken(isoToken(who)).WithTimeout(10 * time.Second)
	}
	adminRemote := remote("admin")
	adminNodes := nodes.On(adminRemote)
	if res, err := adminNodes.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "raw-existing", Properties: map[string]any{"v": 1}}); err != nil || !res.Created {
		t.Fatalf("admin create: %+v %v", res, err)
	}
	admin := identity.Principal{ID: "admin", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
	payload, err := arblog.Marshal(nodes.CreateCommand{NodeID: "raw-forged"})
	if err != nil {
		t.Fatal(err)
	}
	getPayload, err := arblog.Marshal(nodes.GetQuery{NodeID: "raw-existing"})
	if err != nil {
		t.Fatal(err)
	}

	for _, who := range []string{"mem-a", "ctl-a", "read-a", "mem-b"} {
		t.Run(who, func(t *testing.T) {
			r := remote(who)
			nc := nodes.On(r)
			// Even with admin on the client's context: the server decides.
			actx := fsm.WithPrincipal(ctx, admin)
			if _, err := nc.CreateIfAbsent(actx, nodes.CreateRequest{NodeID: "raw-forged"}); !errors.Is(err, errs.Forbidden) {
				t.Errorf("create: %v, want forbidden", err)
			}
			if _, err := nc.CompareAndSet(actx, nodes.CASRequest{NodeID: "raw-existing", Conditions: map[string]any{"v": 1}, Updates: map[string]any{"v": 2}}); !errors.Is(err, errs.Forbidden) {
				t.Errorf("cas: %v, want forbidden", err)
			}
			if _, err := nc.Get(actx, "raw-existing", fsm.Linearizable); !errors.Is(err, errs.Forbidden) {
				t.Errorf("get: %v, want forbidden", err)
			}
			if _, err := nc.Get(actx, "raw-existing", fsm.Stale); !errors.Is(err, errs.Forbidden) {
				t.Errorf("stale get: %v, want forbidden", err)
			}
			if _, err := nc.ByLabel(actx, nodes.LabelQuery{Label: "concept"}, fsm.Linearizable); !errors.Is(err, errs.Forbidden) {
				t.Errorf("by label: %v, want forbidden", err)
			}
			// A forged envelope: admin principal and the authority
			// adapter, written by the client.
			forged := []arblog.Command{
				{Type: nodes.CmdCreate, Version: 1, Principal: admin, Payload: payload},
				{Type: nodes.CmdCreate, Version: 1, Adapter: "authority", Payload: payload},
				{Type: nodes.CmdCreate, Version: 1, Principal: admin, Adapter: "authority", Payload: payload},
				{Type: nodes.CmdCreate, Version: 1, Principal: identity.Principal{}, Adapter: "authority", Payload: payload},
			}
			for i, cmd := range forged {
				res, err := r.Propose(actx, cmd)
				if err == nil && res.Err != nil {
					err = res.Err
				}
				if !errors.Is(err, errs.Forbidden) {
					t.Errorf("forged command %d: %+v %v, want forbidden", i, res, err)
				}
			}
			for i, q := range []fsm.Query{
				{Type: nodes.QueryGet, Payload: getPayload, Adapter: "authority"},
				{Type: nodes.QueryGet, Payload: getPayload, Adapter: "authority", Stale: true},
			} {
				if _, err := r.Query(actx, q); !errors.Is(err, errs.Forbidden) {
					t.Errorf("forged query %d: %v, want forbidden", i, err)
				}
			}
		})
	}
	// Commands internal to the cluster are refused to everyone, admin
	// included: no client writes member metadata or ticks.
	for _, typ := range []arblog.Type{fsm.CmdTick, fsm.CmdMemberUpsert, fsm.CmdMemberRemove} {
		p := arblog.MustMarshal(fsm.Member{ID: "rogue", RaftAddr: "rogue", APIAddr: "127.0.0.1:1"})
		res, err := adminRemote.Propose(ctx, arblog.Command{Type: typ, Version: 1, Payload: p})
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if !errors.Is(err, errs.Forbidden) {
			t.Errorf("admin proposing internal command %d: %+v %v, want forbidden", typ, res, err)
		}
	}
	// A principal in a JSON body is not a field of any request.
	r := isoDo(t, isoClient, http.MethodPost, isoURL(c, follower, "/v1/concepts/reserve"), isoToken("read-a"),
		map[string]any{"concept_id": "ISO-9", "tenant_ref": "a", "request_ref": "r", "purpose_digest": "p", "principal": admin})
	if r.status != http.StatusUnprocessableEntity || r.code != errs.CodeInvalid {
		t.Errorf("reserve with a principal in the body: %s", r)
	}

	// Nothing of the above reached the state.
	if n, err := adminNodes.Get(ctx, "raw-forged", fsm.Linearizable); !errors.Is(err, errs.NotFound) {
		t.Errorf("raw-forged exists: %+v %v", n, err)
	}
	if n, err := adminNodes.Get(ctx, "raw-existing", fsm.Linearizable); err != nil || string(n.Properties["v"]) != "1" || n.Version != 1 {
		t.Errorf("raw-existing changed: %+v %v", n, err)
	}
	for _, m := range c.Node(leader).Status().Members {
		if m.ID == "rogue" {
			t.Errorf("a client wrote member metadata: %+v", m)
		}
	}
	// The admin may use it all (positive control).
	if res, err := adminNodes.CompareAndSet(ctx, nodes.CASRequest{NodeID: "raw-existing", Conditions: map[string]any{"v": 1}, Updates: map[string]any{"v": 2}}); err != nil || !res.Swapped {
		t.Errorf("admin cas: %+v %v", res, err)
	}
}

// An external caller acts only as its own owner: an empty owner ref or
// digest is filled with its principal's, any other is refused.
func TestIsolationOwnerBinding(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	do := func(who, path string, body any) isoReply {
		t.Helper()
		return isoDo(t, isoClient, http.MethodPost, isoURL(c, follower, path), isoToken(who), body)
	}
	mine := identity.Principal{ID: "mem-a"}.OwnerDigest()
	if mine != capacity.OwnerDigest("mem-a") {
		t.Fatalf("the two owner digests of mem-a differ: %s %s", mine, capacity.OwnerDigest("mem-a"))
	}
	if r := do("ctl-a", "/v1/capacity/cells", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "a",
		Cell: capacity.CellSpec{CellID: "cell-own", Capacities: map[string]uint64{"gpu": 10}}}); r.status != 200 {
		t.Fatalf("cell: %s", r)
	}

	reserves := []struct {
		name   string
		owner  string
		status int
	}{
		{"someone else's ref", "owner-of-someone-else", http.StatusForbidden},
		{"another principal's digest", identity.Principal{ID: "mem-a2"}.OwnerDigest(), http.StatusForbidden},
		{"the digest of the admin", identity.Principal{ID: "admin"}.OwnerDigest(), http.StatusForbidden},
		{"empty", "", http.StatusCreated},
		{"its own digest", mine, http.StatusCreated},
	}
	for i, tc := range reserves {
		t.Run("reserve "+tc.name, func(t *testing.T) {
			id := fmt.Sprintf("ISO-%d", 700+i)
			r := do("mem-a", "/v1/concepts/reserve", authority.ReserveRequest{ConceptID: id, TenantRef: "a", OwnerRef: tc.owner, RequestRef: "r-" + id, PurposeDigest: "p"})
			if r.status != tc.status {
				t.Fatalf("%s", r)
			}
			get := isoDo(t, isoClient, http.MethodGet, isoURL(c, leader, "/v1/concepts/get?concept_id="+id+"&tenant_ref=a"), isoToken("admin"), nil)
			if tc.status != http.StatusCreated {
				if r.code != errs.CodeForbidden || get.status != http.StatusNotFound {
					t.Fatalf("refused reserve: %s; then get: %s", r, get)
				}
				return
			}
			var res authority.ReserveResult
			if err := json.Unmarshal(r.body, &res); err != nil || res.Record.OwnerRef != mine {
				t.Fatalf("owner_ref %q, want %q (%v)", res.Record.OwnerRef, mine, err)
			}
			if !bytes.Contains(get.body, []byte(mine)) {
				t.Fatalf("stored claim: %s", get)
			}
		})
	}
	// Another member of the same tenant cannot transition mem-a's claim,
	// naming mem-a's owner ref or its own.
	var held authority.ReserveResult
	r := do("mem-a", "/v1/concepts/reserve", authority.ReserveRequest{ConceptID: "ISO-800", TenantRef: "a", RequestRef: "r-800", PurposeDigest: "p"})
	if err := json.Unmarshal(r.body, &held); err != nil || r.status != http.StatusCreated {
		t.Fatalf("reserve ISO-800: %s", r)
	}
	tr := authority.TransitionRequest{ConceptID: "ISO-800", TenantRef: "a", OwnerRef: mine, ReservationID: held.Record.ReservationID,
		Fingerprint: held.Record.Fingerprint, ExpectedFence: held.Record.Fence, Action: authority.Release}
	if r := do("mem-a2", "/v1/concepts/transition", tr); r.status != http.StatusForbidden {
		t.Errorf("mem-a2 transition naming mem-a: %s", r)
	}
	tr.OwnerRef = ""
	if r := do("mem-a2", "/v1/concepts/transition", tr); r.status/100 == 2 {
		t.Errorf("mem-a2 transition with its own owner ref succeeded: %s", r)
	}
	if r := do("mem-a", "/v1/concepts/transition", tr); r.status != 200 {
		t.Errorf("mem-a transition with an empty owner ref: %s", r)
	}

	acquires := []struct {
		name   string
		owner  string
		status int
	}{
		{"another principal's digest", capacity.OwnerDigest("mem-a2"), http.StatusForbidden},
		{"a made-up digest", "sha256:" + strings.Repeat("0", 64), http.StatusForbidden},
		{"a plain name", "mem-a", http.StatusForbidden},
		{"its own digest", capacity.OwnerDigest("mem-a"), http.StatusOK},
	}
	for i, tc := range acquires {
		t.Run("acquire "+tc.name, func(t *testing.T) {
			lease := fmt.Sprintf("own-lease-own-%d", i)
			r := do("mem-a", "/v1/capacity/acquire", capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "a", WorkItemID: "w", OwnerDigest: tc.owner,
				IdempotencyKey: "k-" + lease, LeaseID: lease, TTLMs: 600_000, Demands: []capacity.Demand{{CellID: "cell-own", ResourceClass: "gpu", Amount: 1}}})
			if r.status != tc.status {
				t.Fatalf("%s", r)
			}
			status := isoCapacity(t, c, leader, capacity.ReadRequest{TenantRef: "a", LeaseID: lease})
			if found := strings.Contains(status, `"lease_id":"`+lease+`"`); found != (tc.status == http.StatusOK) {
				t.Fatalf("lease stored: %v, after %s: %s", found, r, status)
			}
			if tc.status == http.StatusOK && !strings.Contains(status, capacity.OwnerDigest("mem-a")) {
				t.Fatalf("lease without mem-a's digest: %s", status)
			}
		})
	}
	// Renew or release of mem-a's lease by mem-a2, with either digest.
	for _, owner := range []string{capacity.OwnerDigest("mem-a"), capacity.OwnerDigest("mem-a2")} {
		for _, path := range []string{"/v1/capacity/renew", "/v1/capacity/release"} {
			r := do("mem-a2", path, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "a", OwnerDigest: owner,
				Leases: []capacity.LeaseRef{{LeaseID: "own-lease-own-3", LeaseEpoch: 1, Fence: 1}}})
			if r.status/100 == 2 {
				t.Errorf("mem-a2 %s of mem-a's lease with owner %s: %s", path, owner, r)
			}
		}
	}
	if s := isoCapacity(t, c, leader, capacity.ReadRequest{TenantRef: "a", LeaseID: "own-lease-own-3"}); !strings.Contains(s, `"state":"active"`) || !strings.Contains(s, `"lease_epoch":1`) {
		t.Errorf("mem-a's lease after mem-a2's attempts: %s", s)
	}
}

// A new registry takes effect at once, without a restart: a dropped
// principal's token is refused, a new one accepted, changed tenants apply.
func TestIsolationReloadPrincipals(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	get := func(i int, who, path string) isoReply {
		return isoDo(t, isoClient, http.MethodGet, isoURL(c, i, path), isoToken(who), nil)
	}
	for i := 0; i < 3; i++ {
		if r := get(i, "mem-a", "/v1/concepts/list?tenant_ref=a"); r.status != 200 {
			t.Fatalf("node %d before reload: mem-a %s", i, r)
		}
		if r := get(i, "mem-c", "/v1/concepts/list?tenant_ref=c"); r.status != http.StatusUnauthorized {
			t.Fatalf("node %d before reload: mem-c %s", i, r)
		}
	}
	// Drop mem-a, add mem-c, move read-a to tenant b.
	next := isoRegistry(t, []string{"admin", "ctl-a", "mem-a2", "mem-b"},
		identity.PrincipalConfig{ID: "mem-c", Tenants: []string{"c"}, Roles: []string{identity.RoleMember}, TokenSHA256: []string{identity.HashToken(isoToken("mem-c"))}},
		identity.PrincipalConfig{ID: "read-a", Tenants: []string{"b"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{identity.HashToken(isoToken("read-a"))}})
	for i := 0; i < 3; i++ {
		if err := c.Node(i).SetPrincipals(next); err != nil {
			t.Fatalf("SetPrincipals on node %d: %v", i, err)
		}
	}
	for i := 0; i < 3; i++ {
		if r := get(i, "mem-a", "/v1/concepts/list?tenant_ref=a"); r.status != http.StatusUnauthorized || r.code != errs.CodeUnauthorized {
			t.Errorf("node %d: dropped mem-a: %s, want 401", i, r)
		}
		if r := get(i, "mem-c", "/v1/concepts/list?tenant_ref=c"); r.status != 200 {
			t.Errorf("node %d: new mem-c: %s", i, r)
		}
		if r := get(i, "read-a", "/v1/concepts/list?tenant_ref=a"); r.status != http.StatusNotFound {
			t.Errorf("node %d: read-a moved to tenant b still reads tenant a: %s", i, r)
		}
		if r := get(i, "read-a", "/v1/concepts/list?tenant_ref=b"); r.status != 200 {
			t.Errorf("node %d: read-a in tenant b: %s", i, r)
		}
	}
	// Writes forwarded from a follower run as the new principal.
	follower := (leader + 1) % 3
	r := isoDo(t, isoClient, http.MethodPost, isoURL(c, follower, "/v1/concepts/reserve"), isoToken("mem-a"),
		authority.ReserveRequest{ConceptID: "ISO-900", TenantRef: "a", RequestRef: "r", PurposeDigest: "p"})
	if r.status != http.StatusUnauthorized {
		t.Errorf("dropped mem-a reserve: %s", r)
	}
	if s := isoAdminGet(t, c, leader, "/v1/concepts/get?concept_id=ISO-900&tenant_ref=a"); !strings.HasPrefix(s, "404") {
		t.Errorf("ISO-900 after the refused reserve: %s", s)
	}
	// A node with authentication cannot be switched to open mode.
	if err := c.Node(0).SetPrincipals(nil); err == nil {
		t.Error("SetPrincipals(nil) accepted")
	}
	if r := get(0, "mem-b", "/v1/cluster/status"); r.status != 200 || !bytes.Contains(r.body, []byte(`"auth_mode":"principals"`)) {
		t.Errorf("status after a refused switch to open mode: %s", r)
	}
	if r := isoDo(t, isoClient, http.MethodGet, isoURL(c, 0, "/v1/cluster/status"), "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("status without a credential after SetPrincipals(nil): %s", r)
	}
}
