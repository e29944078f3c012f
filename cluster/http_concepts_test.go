package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
)

func chPolicies(t testing.TB) *authority.PolicySet {
	t.Helper()
	ps, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{
		{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"},
		{Namespace: "RMDD", Min: 1000, Max: 1999, PolicyVersion: "10"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func chCluster(t *testing.T, nodes int, configure func(cfg *cluster.Config)) *clustertest.Cluster {
	t.Helper()
	ps := chPolicies(t)
	return clustertest.New(t, clustertest.Options{Nodes: nodes, Configure: func(_ int, cfg *cluster.Config) {
		cfg.Domains = builtin.With(builtin.Options{ConceptPolicies: ps})
		if configure != nil {
			configure(cfg)
		}
	}})
}

// chSecret is a reservation whose every private ref is recognizable.
func chSecret(id string) map[string]any {
	return map[string]any{
		"concept_id": id, "tenant_ref": "SECRET-TENANT", "owner_ref": "SECRET-OWNER", "request_ref": "SECRET-REQUEST",
		"repository_ref": "SECRET-REPO", "lane_ref": "SECRET-LANE", "design_ref": "SECRET-DESIGN",
		"provenance_refs": []string{"SECRET-PROV"}, "purpose_digest": "SECRET-PURPOSE", "ttl_ms": 3_600_000,
	}
}

func chReserve(id, tenant, owner, request string) map[string]any {
	return map[string]any{"concept_id": id, "tenant_ref": tenant, "owner_ref": owner, "request_ref": request, "purpose_digest": "p-" + request}
}

// chResult requires status and decodes a reservation result.
func chResult(t *testing.T, what string, r apiReply, status int) authority.ReserveResult {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q", what, ct)
	}
	var res authority.ReserveResult
	if err := json.Unmarshal(r.body, &res); err != nil || res.Record == nil {
		t.Fatalf("%s: body %s: %v", what, r.body, err)
	}
	return res
}

func chTransition(rec *authority.Record, action authority.Action, fence uint64) authority.TransitionRequest {
	return authority.TransitionRequest{ConceptID: rec.ConceptID, TenantRef: rec.TenantRef, OwnerRef: rec.OwnerRef,
		ReservationID: rec.ReservationID, Fingerprint: rec.Fingerprint, ExpectedFence: fence, Action: action}
}

func chGetURL(base, id, tenant string) string {
	q := url.Values{"concept_id": {id}}
	if tenant != "" {
		q.Set("tenant_ref", tenant)
	}
	return base + "/v1/concepts/get?" + q.Encode()
}

func chListURL(base, tenant string) string {
	return base + "/v1/concepts/list?" + url.Values{"tenant_ref": {tenant}}.Encode()
}

var chPublic = []string{"concept_id", "created_at_ms", "expires_at_ms", "fence", "namespace", "policy_version", "state", "visibility"}

func TestConceptHTTPRoutes(t *testing.T) {
	c := chCluster(t, 1, nil)
	base := apiBase(c, 0)

	// 201 created, 200 replayed.
	first := chResult(t, "reserve", apiPost(t, base+"/v1/concepts/reserve", chSecret("RMDD-27")), http.StatusCreated)
	rec := first.Record
	if !first.Created || first.Reclaimed || first.Replayed || rec.State != authority.Reserved || rec.Fence == 0 || rec.PrevFence != 0 ||
		rec.PolicyVersion != "2" || rec.RangeMin != 1 || rec.RangeMax != 999 || rec.TenantRef != "SECRET-TENANT" {
		t.Fatalf("reserve: %+v %+v", first, rec)
	}
	again := apiPost(t, base+"/v1/concepts/reserve", chSecret("RMDD-27"))
	replay := chResult(t, "reserve retry", again, http.StatusOK)
	if !replay.Replayed || replay.Created || !reflect.DeepEqual(replay.Record, rec) || !strings.Contains(string(again.body), `"replayed":true`) {
		t.Fatalf("reserve retry: %s", again.body)
	}

	// 409: another request, with the winner's public fields only.
	for _, other := range []map[string]any{chReserve("RMDD-27", "tenant-b", "bob", "b1"), chReserve("RMDD-27", "SECRET-TENANT", "bob", "b2")} {
		var r apiReply
		c.Unchanged(t, "conflicting reserve", func() {
			r = apiPost(t, base+"/v1/concepts/reserve", other)
			r.wantError(t, "conflicting reserve", http.StatusConflict, errs.CodeConflict)
		})
		var body struct {
			Error struct {
				Detail json.RawMessage `json:"detail"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, "conflict detail", body.Error.Detail, chPublic...)
		var d map[string]any
		_ = json.Unmarshal(body.Error.Detail, &d)
		if d["concept_id"] != "RMDD-27" || d["state"] != "reserved" || d["fence"] != float64(rec.Fence) || d["policy_version"] != "2" ||
			d["visibility"] != "none" || d["created_at_ms"] != float64(rec.CreatedAtMs) || d["expires_at_ms"] != float64(rec.ExpiresAtMs) {
			t.Errorf("conflict detail %v", d)
		}
		if strings.Contains(string(r.body), "SECRET") || strings.Contains(string(r.body), rec.ReservationID) || strings.Contains(string(r.body), rec.Fingerprint) {
			t.Errorf("conflict reveals private fields: %s", r.body)
		}
	}

	// 422: no matching policy and malformed requests, none of which
	// creates anything.
	unknownField := chReserve("RMDD-30", "tenant-a", "alice", "a1")
	unknownField["surprise"] = 1
	overTTL := chReserve("RMDD-30", "tenant-a", "alice", "a1")
	overTTL["ttl_ms"] = authority.MaxTTL.Milliseconds() + 1
	stringTTL := chReserve("RMDD-30", "tenant-a", "alice", "a1")
	stringTTL["ttl_ms"] = "1000"
	noTenant := chReserve("RMDD-30", "", "alice", "a1")
	for _, tc := range []struct {
		name string
		body any
	}{
		{"no policy", chReserve("RMDD-2000", "tenant-a", "alice", "a1")},
		{"unknown namespace", chReserve("NOPE-30", "tenant-a", "alice", "a1")},
		{"lower-case id", chReserve("rmdd-30", "tenant-a", "alice", "a1")},
		{"leading zero", chReserve("RMDD-030", "tenant-a", "alice", "a1")},
		{"unknown field", unknownField},
		{"ttl over the bound", overTTL},
		{"ttl as a string", stringTTL},
		{"no tenant", noTenant},
		{"an array", []any{chReserve("RMDD-30", "tenant-a", "alice", "a1")}},
	} {
		c.Unchanged(t, "reserve with "+tc.name, func() {
			apiPost(t, base+"/v1/concepts/reserve", tc.body).wantError(t, "reserve with "+tc.name, http.StatusUnprocessableEntity, errs.CodeInvalid)
		})
	}
	apiDo(t, http.MethodPost, base+"/v1/concepts/reserve", []byte(`{"concept_id": "RMDD-30",`)).
		wantError(t, "truncated JSON", http.StatusUnprocessableEntity, errs.CodeInvalid)
	apiDo(t, http.MethodPost, base+"/v1/concepts/reserve", []byte(`{"concept_id": "RMDD-30"} {}`)).
		wantError(t, "two JSON values", http.StatusUnprocessableEntity, errs.CodeInvalid)
	for _, id := range []string{"RMDD-2000", "NOPE-30", "RMDD-30"} {
		apiGet(t, chGetURL(base, id, "")).wantError(t, "get after a refused reserve", http.StatusNotFound, errs.CodeNotFound)
	}

	// Transitions: 200, 200 replayed, 409 stale_fence and conflict.
	var tr authority.TransitionResult
	apiPost(t, base+"/v1/concepts/transition", chTransition(rec, authority.Release, rec.Fence)).ok(t, "release", &tr)
	if tr.Replayed || tr.Record.State != authority.Released || tr.Record.Fence <= rec.Fence || tr.Record.PrevFence != rec.Fence {
		t.Fatalf("release: %+v", tr)
	}
	released := tr.Record
	retry := apiPost(t, base+"/v1/concepts/transition", chTransition(rec, authority.Release, rec.Fence))
	retry.ok(t, "release retry", &tr)
	if !tr.Replayed || tr.Record.Fence != released.Fence || !strings.Contains(string(retry.body), `"replayed":true`) {
		t.Fatalf("release retry: %s", retry.body)
	}
	foreign := chTransition(rec, authority.Materialize, released.Fence)
	foreign.TenantRef = "tenant-b"
	for _, refused := range []struct {
		what   string
		body   any
		status int
		code   errs.Code
	}{
		{"materialize with the old fence", chTransition(rec, authority.Materialize, rec.Fence), http.StatusConflict, errs.CodeStaleFence},
		{"materialize a released claim", chTransition(rec, authority.Materialize, released.Fence), http.StatusConflict, errs.CodeConflict},
		{"transition by another tenant", foreign, http.StatusNotFound, errs.CodeNotFound},
		{"unknown action", chTransition(rec, "delete", released.Fence), http.StatusUnprocessableEntity, errs.CodeInvalid},
		{"transition with an unknown field", map[string]any{"concept_id": "RMDD-27", "fence": 2}, http.StatusUnprocessableEntity, errs.CodeInvalid},
	} {
		c.Unchanged(t, refused.what, func() {
			apiPost(t, base+"/v1/concepts/transition", refused.body).wantError(t, refused.what, refused.status, refused.code)
		})
	}

	// 201 reclaimed, by another tenant.
	re := chResult(t, "reclaim", apiPost(t, base+"/v1/concepts/reserve", chReserve("RMDD-27", "tenant-b", "bob", "b1")), http.StatusCreated)
	if !re.Reclaimed || re.Created || re.Replayed || re.Record.Fence <= released.Fence || re.Record.PrevFence != released.Fence || re.Record.TenantRef != "tenant-b" {
		t.Fatalf("reclaim: %+v %+v", re, re.Record)
	}

	// Get and list are tenant-scoped.
	var got authority.Record
	apiGet(t, chGetURL(base, "RMDD-27", "tenant-b")).ok(t, "get as the holder's tenant", &got)
	if !reflect.DeepEqual(&got, re.Record) {
		t.Fatalf("get: %+v, want %+v", got, re.Record)
	}
	apiGet(t, chGetURL(base, "RMDD-27", "SECRET-TENANT")).wantError(t, "get as the old tenant", http.StatusNotFound, errs.CodeNotFound)
	apiGet(t, chGetURL(base, "RMDD-28", "tenant-b")).wantError(t, "get of a free id", http.StatusNotFound, errs.CodeNotFound)
	apiGet(t, chGetURL(base, "rmdd-27", "tenant-b")).wantError(t, "get of a bad id", http.StatusUnprocessableEntity, errs.CodeInvalid)
	apiGet(t, chGetURL(base, "RMDD-27", "tenant-b")+"&extra=1").wantError(t, "get with an unknown parameter", http.StatusUnprocessableEntity, errs.CodeInvalid)
	var page authority.RecordPage
	apiGet(t, chListURL(base, "tenant-b")).ok(t, "list of tenant-b", &page)
	if len(page.Records) != 1 || !reflect.DeepEqual(page.Records[0], re.Record) || page.NextCursor != "" {
		t.Fatalf("list of tenant-b: %+v", page)
	}
	page = authority.RecordPage{}
	apiGet(t, chListURL(base, "SECRET-TENANT")).ok(t, "list of the old tenant", &page)
	if len(page.Records) != 0 {
		t.Fatalf("list of the old tenant: %+v", page)
	}
	apiGet(t, base+"/v1/concepts/list").wantError(t, "list without a tenant", http.StatusUnprocessableEntity, errs.CodeInvalid)
	apiGet(t, chListURL(base, "tenant-b")+"&limit=129").wantError(t, "list over the page bound", http.StatusUnprocessableEntity, errs.CodeInvalid)
	apiGet(t, chListURL(base, "tenant-b")+"&after=bogus").wantError(t, "list after a forged cursor", http.StatusUnprocessableEntity, errs.CodeInvalid)

	// Paging through several claims.
	for _, id := range []string{"RMDD-1", "RMDD-2", "RMDD-3"} {
		chResult(t, "reserve "+id, apiPost(t, base+"/v1/concepts/reserve", chReserve(id, "tenant-c", "carol", id)), http.StatusCreated)
	}
	var ids []string
	next := ""
	for pages := 0; pages < 5; pages++ {
		u := chListURL(base, "tenant-c") + "&limit=2"
		if next != "" {
			u += "&" + url.Values{"after": {next}}.Encode()
		}
		page = authority.RecordPage{}
		apiGet(t, u).ok(t, "list page", &page)
		for _, r := range page.Records {
			ids = append(ids, r.ConceptID)
		}
		if next = page.NextCursor; next == "" {
			break
		}
	}
	if !slices.Equal(ids, []string{"RMDD-1", "RMDD-2", "RMDD-3"}) {
		t.Fatalf("paged list: %v", ids)
	}

	// reserve-next: skips held candidates, replays, is bounded.
	nextReq := map[string]any{"namespace": "RMDD", "from": 1, "to": 30, "request": chReserve("", "tenant-a", "alice", "n1")}
	delete(nextReq["request"].(map[string]any), "concept_id")
	rn := chResult(t, "reserve-next", apiPost(t, base+"/v1/concepts/reserve-next", nextReq), http.StatusCreated)
	if !rn.Created || rn.Record.ConceptID != "RMDD-4" {
		t.Fatalf("reserve-next: %+v %+v", rn, rn.Record)
	}
	rn2 := chResult(t, "reserve-next retry", apiPost(t, base+"/v1/concepts/reserve-next", nextReq), http.StatusOK)
	if !rn2.Replayed || rn2.Record.ConceptID != "RMDD-4" {
		t.Fatalf("reserve-next retry: %+v", rn2)
	}
	held := map[string]any{"namespace": "RMDD", "from": 1, "to": 4, "request": chReserve("", "tenant-a", "alice", "n2")}
	delete(held["request"].(map[string]any), "concept_id")
	apiPost(t, base+"/v1/concepts/reserve-next", held).wantError(t, "reserve-next over held ids", http.StatusConflict, errs.CodeExhausted)
	withID := map[string]any{"namespace": "RMDD", "from": 1, "to": 4, "request": chReserve("RMDD-1", "tenant-a", "alice", "n3")}
	apiPost(t, base+"/v1/concepts/reserve-next", withID).wantError(t, "reserve-next with a concept id", http.StatusUnprocessableEntity, errs.CodeInvalid)
	wide := map[string]any{"namespace": "RMDD", "from": 1, "to": 129, "request": held["request"]}
	apiPost(t, base+"/v1/concepts/reserve-next", wide).wantError(t, "reserve-next over 129 candidates", http.StatusUnprocessableEntity, errs.CodeInvalid)
}

// authority.Client speaks the same routes and returns the same typed
// results and errors as the in-process adapter.
func TestConceptClientRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := chCluster(t, 1, nil)
	cl := authority.NewClient(rawremote.New(c.Node(0).APIAddr()))
	if !cl.Authoritative() {
		t.Fatal("the concept client is not authoritative")
	}
	req := authority.ReserveRequest{ConceptID: "RMDD-1500", TenantRef: "tenant-a", OwnerRef: "alice", RequestRef: "a1",
		PurposeDigest: "p", ProvenanceRefs: []string{"prov-1"}}
	first, err := cl.Reserve(ctx, req)
	if err != nil || !first.Created || first.Record.PolicyVersion != "10" || first.Record.RangeMin != 1000 {
		t.Fatalf("reserve: %+v %v", first, err)
	}
	rec := first.Record
	again, err := cl.Reserve(ctx, req)
	if err != nil || !again.Replayed || !reflect.DeepEqual(again.Record, rec) {
		t.Fatalf("reserve retry: %+v %v", again, err)
	}
	other := req
	other.TenantRef, other.OwnerRef, other.RequestRef = "tenant-b", "bob", "b1"
	_, err = cl.Reserve(ctx, other)
	var e *errs.Error
	if !errors.Is(err, errs.Conflict) || !errors.As(err, &e) || e.Detail["state"] != "reserved" || e.Detail["owner_ref"] != nil ||
		errors.Is(err, authority.ErrAuthorityUnavailable) {
		t.Fatalf("conflicting reserve: %v (%+v)", err, e)
	}
	bad := req
	bad.ConceptID = "RMDD-5000"
	if _, err := cl.Reserve(ctx, bad); !errors.Is(err, errs.Invalid) {
		t.Fatalf("reserve without a policy: %v", err)
	}

	// The projection service runs over the client.
	repo := t.TempDir()
	crs := authority.NewConceptReservationService(cl, repo)
	m, err := crs.Materialize(ctx, authority.MaterializeRequest{ConceptID: rec.ConceptID, TenantRef: rec.TenantRef, OwnerRef: rec.OwnerRef,
		ReservationID: rec.ReservationID, Fingerprint: rec.Fingerprint, ExpectedFence: rec.Fence})
	if err != nil || m.State != authority.Materialized || m.Fence <= rec.Fence || m.PrevFence != rec.Fence {
		t.Fatalf("materialize over the client: %+v %v", m, err)
	}
	if frags, _ := filepath.Glob(filepath.Join(repo, "concepts", "fragments", "*.jsonl")); len(frags) != 1 {
		t.Fatalf("fragments: %v", frags)
	}
	if _, err := os.Stat(filepath.Join(repo, "concepts", "view.json")); err != nil {
		t.Fatal(err)
	}
	tr, err := cl.Transition(ctx, chTransition(rec, authority.Materialize, rec.Fence))
	if err != nil || !tr.Replayed || !reflect.DeepEqual(tr.Record, m) {
		t.Fatalf("materialize retry: %+v %v", tr, err)
	}
	landed, err := cl.Transition(ctx, chTransition(rec, authority.Land, m.Fence))
	if err != nil || landed.Replayed || landed.Record.State != authority.Landed || landed.Record.Visibility != authority.VisibilityRepository {
		t.Fatalf("land: %+v %v", landed, err)
	}
	if _, err := cl.Transition(ctx, chTransition(rec, authority.Tombstone, m.Fence)); !errors.Is(err, errs.StaleFence) {
		t.Fatalf("stale tombstone: %v", err)
	}
	got, err := cl.Get(ctx, "RMDD-1500", "tenant-a")
	if err != nil || !reflect.DeepEqual(got, landed.Record) {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := cl.Get(ctx, "RMDD-1500", "tenant-b"); !errors.Is(err, errs.NotFound) {
		t.Fatalf("get as another tenant: %v", err)
	}
	page, err := cl.List(ctx, authority.ListRequest{TenantRef: "tenant-a", Limit: 10})
	if err != nil || len(page.Records) != 1 || !reflect.DeepEqual(page.Records[0], landed.Record) {
		t.Fatalf("list: %+v %v", page, err)
	}
	next, err := cl.ReserveNextNumeric(ctx, authority.ReserveNextRequest{Namespace: "RMDD", From: 1500, To: 1510,
		Request: authority.ReserveRequest{TenantRef: "tenant-a", OwnerRef: "alice", RequestRef: "a2", PurposeDigest: "p"}})
	if err != nil || !next.Created || next.Record.ConceptID != "RMDD-1501" {
		t.Fatalf("reserve-next: %+v %v", next, err)
	}
	_, err = cl.ReserveNextNumeric(ctx, authority.ReserveNextRequest{Namespace: "RMDD", From: 1500, To: 1501,
		Request: authority.ReserveRequest{TenantRef: "tenant-a", OwnerRef: "alice", RequestRef: "a3", PurposeDigest: "p"}})
	if !errors.Is(err, errs.Exhausted) {
		t.Fatalf("reserve-next over held ids: %v", err)
	}
	// Reconcile over the client sees the claims it made.
	rep, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 10, SourceMarkers: []string{"RMDD-1500", "RMDD-7"}})
	if err != nil || rep.NativeRecords != 2 || !slices.Equal(rep.MarkersWithoutClaims, []string{"RMDD-7"}) || len(rep.StateMismatches) != 2 {
		t.Fatalf("reconcile over the client: %+v %v", rep, err)
	}
}

// Without a quorum the authority cannot decide: every route answers 503
// with Retry-After, and the client reports ErrAuthorityUnavailable.
func TestConceptHTTPUnavailableWithoutQuorum(t *testing.T) {
	c := chCluster(t, 3, func(cfg *cluster.Config) { cfg.ApplyTimeout = time.Second })
	leader := c.Leader()
	keep := (leader + 1) % c.Size()
	base := apiBase(c, keep)
	cl := authority.NewClient(rawremote.New(c.Node(keep).APIAddr()))
	ctx := context.Background()
	held, err := cl.Reserve(ctx, authority.ReserveRequest{ConceptID: "RMDD-1", TenantRef: "tenant-a", OwnerRef: "alice", RequestRef: "a1", PurposeDigest: "p"})
	if err != nil {
		t.Fatalf("reserve with a quorum: %v", err)
	}
	c.Stop(leader)
	c.Stop((leader + 2) % c.Size())

	begin := time.Now()
	apiPost(t, base+"/v1/concepts/reserve", chReserve("RMDD-2", "tenant-a", "alice", "a2")).
		wantError(t, "reserve without quorum", http.StatusServiceUnavailable, errs.CodeUnavailable)
	nextReq := map[string]any{"namespace": "RMDD", "from": 2, "to": 3, "request": map[string]any{"tenant_ref": "tenant-a", "owner_ref": "alice", "request_ref": "a3", "purpose_digest": "p"}}
	apiPost(t, base+"/v1/concepts/reserve-next", nextReq).
		wantError(t, "reserve-next without quorum", http.StatusServiceUnavailable, errs.CodeUnavailable)
	apiPost(t, base+"/v1/concepts/transition", chTransition(held.Record, authority.Materialize, 1)).
		wantError(t, "transition without quorum", http.StatusServiceUnavailable, errs.CodeUnavailable)
	apiGet(t, chGetURL(base, "RMDD-1", "tenant-a")).wantError(t, "get without quorum", http.StatusServiceUnavailable, errs.CodeUnavailable)
	apiGet(t, chListURL(base, "tenant-a")).wantError(t, "list without quorum", http.StatusServiceUnavailable, errs.CodeUnavailable)
	// Malformed requests are still refused at once, without the log.
	// (Whether a policy covers a well-formed id is the replicated policy
	// set's to say, in the log: without a quorum, unavailable.)
	apiPost(t, base+"/v1/concepts/reserve", chReserve("rmdd-5000", "tenant-a", "alice", "a2")).
		wantError(t, "reserve of a malformed id, without quorum", http.StatusUnprocessableEntity, errs.CodeInvalid)
	apiPost(t, base+"/v1/concepts/reserve", chReserve("RMDD-5000", "tenant-a", "alice", "a2")).
		wantError(t, "reserve without a policy, without quorum", http.StatusServiceUnavailable, errs.CodeUnavailable)

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"reserve", func() error {
			_, err := cl.Reserve(ctx, authority.ReserveRequest{ConceptID: "RMDD-2", TenantRef: "tenant-a", OwnerRef: "alice", RequestRef: "a2", PurposeDigest: "p"})
			return err
		}},
		{"reserve-next", func() error {
			_, err := cl.ReserveNextNumeric(ctx, authority.ReserveNextRequest{Namespace: "RMDD", From: 2, To: 3,
				Request: authority.ReserveRequest{TenantRef: "tenant-a", OwnerRef: "alice", RequestRef: "a3", PurposeDigest: "p"}})
			return err
		}},
		{"transition", func() error {
			_, err := cl.Transition(ctx, chTransition(held.Record, authority.Materialize, 1))
			return err
		}},
		{"get", func() error { _, err := cl.Get(ctx, "RMDD-1", "tenant-a"); return err }},
		{"list", func() error { _, err := cl.List(ctx, authority.ListRequest{TenantRef: "tenant-a"}); return err }},
	} {
		err := tc.call()
		if !errors.Is(err, authority.ErrAuthorityUnavailable) || !errors.Is(err, errs.Unavailable) || errs.CodeOf(err) != errs.CodeUnavailable {
			t.Errorf("client %s without quorum: %v, want ErrAuthorityUnavailable", tc.name, err)
		}
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Errorf("calls without quorum took %v; each should end near ApplyTimeout (1s)", took)
	}
	// Nothing was decided: a stale read of the surviving node finds no
	// claim of RMDD-2.
	if r := apiGet(t, base+"/v1/nodes/get?node_id=concept-reservation:RMDD-2&consistency=stale"); r.status != http.StatusNotFound {
		t.Errorf("stale read of RMDD-2 after refused reserves: %d %s", r.status, r.body)
	}
}
