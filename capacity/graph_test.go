package capacity_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

// newGatedService is newService with every command this binary serves
// enabled, as a cluster whose members all run it has.
func newGatedService(t *testing.T) (*fsmtest.Local, *capacity.Service) {
	t.Helper()
	l, s := newService(t)
	if err := l.Enable(fsm.ServedBy(capacity.Module())); err != nil {
		t.Fatal(err)
	}
	return l, s
}

func cellIn(t *testing.T, s *capacity.Service, graph, id string, caps map[string]uint64) {
	t.Helper()
	if _, err := s.UpdateCell(context.Background(), capacity.UpdateCellRequest{TenantRef: "t", GraphRef: graph,
		Cell: capacity.CellSpec{CellID: id, Capacities: caps}}); err != nil {
		t.Fatalf("cell %s in graph %q: %v", id, graph, err)
	}
}

func acquireIn(graph, key string, demands ...capacity.Demand) capacity.AcquireRequest {
	r := acquire(key, demands...)
	r.GraphRef = graph
	return r
}

// Two graphs of one tenant are independent: a cell id, a lease id and an
// idempotency key name different things in each; a grant in one takes
// nothing of the other; reads, renewals, releases and reclaims see one
// graph only. A request without graph_ref is in the default graph, which
// graph_ref "default" names too.
func TestGraphsOfOneTenantAreIndependent(t *testing.T) {
	ctx := context.Background()
	l, s := newGatedService(t)
	gpu := capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 1}
	cellIn(t, s, "", "c", map[string]uint64{"gpu": 1})
	cellIn(t, s, "g2", "c", map[string]uint64{"gpu": 1})

	def, err := s.Acquire(ctx, acquire("k", gpu))
	if err != nil || def.Decision != capacity.Granted {
		t.Fatalf("default graph: %+v %v", def, err)
	}
	// The same key and request in graph g2: a grant of its own, not a
	// replay of the default graph's, and its cell is not the full one.
	g2, err := s.Acquire(ctx, acquireIn("g2", "k", gpu))
	if err != nil || g2.Decision != capacity.Granted || g2.Replayed {
		t.Fatalf("graph g2 under the default graph's key: %+v %v", g2, err)
	}
	if g2.Leases[0].GraphRef != "g2" || def.Leases[0].GraphRef != "" {
		t.Fatalf("leases report graphs %q and %q", def.Leases[0].GraphRef, g2.Leases[0].GraphRef)
	}
	// A replay stays in its graph.
	again, err := s.Acquire(ctx, acquireIn("g2", "k", gpu))
	if err != nil || !again.Replayed || again.Leases[0].LeaseID != g2.Leases[0].LeaseID {
		t.Fatalf("replay in g2: %+v %v", again, err)
	}
	// "default" names the default graph: its cell is full, and its key k
	// replays the default graph's grant.
	named, err := s.Acquire(ctx, acquireIn(capacity.DefaultGraph, "k", gpu))
	if err != nil || !named.Replayed || named.Leases[0].LeaseID != def.Leases[0].LeaseID {
		t.Fatalf("graph_ref %q under key k: %+v %v", capacity.DefaultGraph, named, err)
	}
	if _, err := s.Acquire(ctx, acquireIn(capacity.DefaultGraph, "k2", gpu)); !errors.Is(err, errs.Exhausted) {
		t.Fatalf("a second grant on the default graph's full cell: %v", err)
	}
	// A caller-named lease id may be used in both graphs.
	for _, g := range []string{"", "g3"} {
		cellIn(t, s, g, "d", map[string]uint64{"gpu": 2})
		r := acquireIn(g, "named-"+g, capacity.Demand{CellID: "d", ResourceClass: "gpu", Amount: 1})
		r.LeaseID = "L"
		if _, err := s.Acquire(ctx, r); err != nil {
			t.Fatalf("lease L in graph %q: %v", g, err)
		}
	}

	// Reads see one graph.
	read := func(graph string) *capacity.ReadResult {
		t.Helper()
		res, err := s.Reconcile(ctx, capacity.ReadRequest{TenantRef: "t", GraphRef: graph, MaxCount: 10}, fsm.Linearizable)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if got := read("g2"); len(got.Leases) != 1 || got.Leases[0].LeaseID != g2.Leases[0].LeaseID || len(got.Cells) != 1 || got.Cells[0].GraphRef != "g2" {
		t.Fatalf("reconcile of g2: %+v", got)
	}
	if got := read(""); len(got.Leases) != 2 {
		t.Fatalf("reconcile of the default graph: %d leases, want 2", len(got.Leases))
	}
	st, err := s.Status(ctx, capacity.ReadRequest{TenantRef: "t", GraphRef: "g2", MaxCount: 10}, fsm.Linearizable)
	if err != nil || len(st.Cells) != 1 || st.Cells[0].CellID != "c" || st.Cells[0].Classes[0].Used != 1 {
		t.Fatalf("status of g2: %+v %v", st, err)
	}

	// A lease of g2 is unknown to the default graph, and its renewal in
	// g2 leaves the default graph's lease of the same cell id alone.
	ref := g2.Leases[0].Ref()
	if _, err := s.Renew(ctx, capacity.LeasesRequest{TenantRef: "t", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref}}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("renew of g2's lease in the default graph: %v", err)
	}
	rn, err := s.Renew(ctx, capacity.LeasesRequest{TenantRef: "t", GraphRef: "g2", OwnerDigest: "owner-a", Leases: []capacity.LeaseRef{ref}, IdempotencyKey: "r"})
	if err != nil || rn.Leases[0].LeaseEpoch != 2 {
		t.Fatalf("renew in g2: %+v %v", rn, err)
	}
	if got := read(""); got.Leases[0].LeaseEpoch != 1 {
		t.Fatalf("renewing g2's lease changed the default graph's: %+v", got.Leases[0])
	}

	// Expiry: reclaim in g2 ends g2's leases only.
	l.Advance(24 * time.Hour) // past every TTL
	rc, err := s.Reclaim(ctx, capacity.ReclaimRequest{TenantRef: "t", GraphRef: "g2", MaxCount: 10})
	if err != nil || len(rc.ReclaimedLeaseIDs) != 1 || rc.ReclaimedLeaseIDs[0] != g2.Leases[0].LeaseID {
		t.Fatalf("reclaim of g2: %+v %v", rc, err)
	}
	for _, l := range read("").Leases {
		if l.State != capacity.LeaseActive {
			t.Fatalf("reclaim of g2 ended the default graph's lease %s", l.LeaseID)
		}
	}
	if bad := readStored(t, l.FSM).invariants(); len(bad) > 0 {
		t.Fatalf("capacity tables break %d invariants:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
}

// A graph other than the default one needs every capacity command at the
// version that brought graphs: a cluster that has not enabled it (a
// member still runs an older binary), or state that enables nothing yet,
// refuses the request and changes nothing. The default graph works as
// before either way.
func TestGraphsNeedTheirVersion(t *testing.T) {
	ctx := context.Background()
	for name, enable := range map[string]func(*fsmtest.Local) error{
		"ungated":           func(*fsmtest.Local) error { return nil },
		"pre-graph enabled": func(l *fsmtest.Local) error { return l.Enable(pregraphSet()) },
	} {
		t.Run(name, func(t *testing.T) {
			l, s := newService(t)
			if err := enable(l); err != nil {
				t.Fatal(err)
			}
			cell(t, s, "c", map[string]uint64{"gpu": 1})
			before := readStored(t, l.FSM).capacityDigest()
			_, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{TenantRef: "t", GraphRef: "g2", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"gpu": 1}}})
			if errs.CodeOf(err) != errs.CodeUnavailable {
				t.Fatalf("update of a cell in graph g2: %v, want unavailable", err)
			}
			_, err = s.Acquire(ctx, acquireIn("g2", "k", capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 1}))
			if errs.CodeOf(err) != errs.CodeUnavailable {
				t.Fatalf("acquire in graph g2: %v, want unavailable", err)
			}
			if readStored(t, l.FSM).capacityDigest() != before {
				t.Fatal("a refused graph request changed the capacity tables")
			}
			if _, err := s.Acquire(ctx, acquire("k", capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 1})); err != nil {
				t.Fatalf("acquire in the default graph: %v", err)
			}
		})
	}
}

// The FSM does not trust the proposer's idempotency scope: a keyed
// command whose scope is not the one of its operation, graph and tenant
// is refused, so that a key can never reach across graphs. (Below the
// tenant-keyed versions: TestTenantScopeNamesGraphAndTenant is this
// from them on.)
func TestIdempotencyScopeNamesGraphAndTenant(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	if err := l.Enable(capsAt(3, 2)); err != nil {
		t.Fatal(err)
	}
	cellIn(t, s, "g2", "c", map[string]uint64{"gpu": 4})
	payload := log.MustMarshal(map[string]any{
		"tenant_ref": "t", "graph_ref": "g2", "work_item_id": "w", "owner_digest": "o", "priority": 0,
		"demands": []map[string]any{{"cell_id": "c", "resource_class": "gpu", "amount": 1}}, "lease_id": "", "ttl_ms": 1000,
	})
	for _, scope := range []string{capScope("acquire", "t"), capGraphScope("renew", "t", "g2"), capGraphScope("acquire", "t", "g3"), "capacity/acquire/elsewhere"} {
		res, err := l.Propose(ctx, log.Command{Type: capacity.CmdAcquire, Version: 3, IdemScope: scope, IdemKey: "k", Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		if res.Err == nil || res.Err.Code != errs.CodeInvalid {
			t.Fatalf("acquire in g2 under scope %q: %v, want invalid", scope, res.Err)
		}
	}
	res, err := l.Propose(ctx, log.Command{Type: capacity.CmdAcquire, Version: 3, IdemScope: capGraphScope("acquire", "t", "g2"), IdemKey: "k", Payload: payload})
	if err != nil || res.Err != nil {
		t.Fatalf("acquire in g2 under its own scope: %v %v", err, res.Err)
	}
}

// Lease.Ref is the token a holder presents; a renewal's result gives the
// tokens to present next, and so does an acquire's.
func TestLeaseRefs(t *testing.T) {
	ctx := context.Background()
	_, s := newService(t)
	cell(t, s, "c", map[string]uint64{"gpu": 4})
	got, err := s.Acquire(ctx, acquire("k", capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 1}, capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 2}))
	if err != nil {
		t.Fatal(err)
	}
	refs := got.Refs()
	if len(refs) != 2 || refs[1] != (capacity.LeaseRef{LeaseID: got.Leases[1].LeaseID, LeaseEpoch: 1, Fence: got.Leases[1].Fence}) {
		t.Fatalf("acquire refs %+v of leases %+v", refs, got.Leases)
	}
	for i := 0; i < 3; i++ {
		rn, err := s.Renew(ctx, capacity.LeasesRequest{TenantRef: "t", OwnerDigest: "owner-a", Leases: refs})
		if err != nil {
			t.Fatalf("renewal %d with the refs of the one before: %v", i, err)
		}
		refs = rn.Refs()
		if refs[0] != rn.Leases[0].Ref() || refs[0].LeaseEpoch != uint64(i+2) {
			t.Fatalf("renewal %d: refs %+v", i, refs)
		}
	}
	if _, err := s.Release(ctx, capacity.LeasesRequest{TenantRef: "t", OwnerDigest: "owner-a", Leases: refs}); err != nil {
		t.Fatal(err)
	}
}

// The Go API fills in the schema version a caller leaves out; an explicit
// other one is invalid. Over HTTP schema_version stays required: a body
// is not compiled against this package, so it says which schema it
// speaks.
func TestSchemaVersion(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	if _, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{TenantRef: "t", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"gpu": 4}}}); err != nil {
		t.Fatalf("update without a schema version: %v", err)
	}
	req := acquire("k", capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 1})
	req.SchemaVersion = ""
	if _, err := s.Acquire(ctx, req); err != nil {
		t.Fatalf("acquire without a schema version: %v", err)
	}
	req.SchemaVersion = "2"
	if _, err := s.Acquire(ctx, req); !errors.Is(err, errs.Invalid) {
		t.Fatalf("acquire with schema version 2: %v", err)
	}
	if _, err := s.Status(ctx, capacity.ReadRequest{TenantRef: "t", MaxCount: 1}, fsm.Linearizable); err != nil {
		t.Fatalf("status without a schema version: %v", err)
	}

	mux := routesOver(l)
	if code, body := post(mux, "/v1/capacity/status", `{"tenant_ref":"t","max_count":1}`); code != http.StatusUnprocessableEntity || !strings.Contains(body, "schema_version") {
		t.Fatalf("status over HTTP without schema_version: %d %s", code, body)
	}
	if code, body := post(mux, "/v1/capacity/status", `{"schema_version":"1","tenant_ref":"t","max_count":1}`); code != http.StatusOK {
		t.Fatalf("status over HTTP: %d %s", code, body)
	}
}

// graph_ref travels over HTTP: a body may name a graph.
func TestGraphOverHTTP(t *testing.T) {
	l, s := newGatedService(t)
	cellIn(t, s, "g2", "c", map[string]uint64{"gpu": 4})
	mux := routesOver(l)
	code, body := post(mux, "/v1/capacity/acquire", `{"schema_version":"1","tenant_ref":"t","graph_ref":"g2","work_item_id":"w","owner_digest":"o",
		"idempotency_key":"k","demands":[{"cell_id":"c","resource_class":"gpu","amount":1}],"ttl_ms":1000}`)
	if code != http.StatusOK {
		t.Fatalf("acquire in g2 over HTTP: %d %s", code, body)
	}
	var res capacity.AcquireResult
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Leases) != 1 || res.Leases[0].GraphRef != "g2" {
		t.Fatalf("acquire in g2 over HTTP: %s (%v)", body, err)
	}
	code, body = post(mux, "/v1/capacity/status", `{"schema_version":"1","tenant_ref":"t","graph_ref":"g2","max_count":1}`)
	if code != http.StatusOK || !strings.Contains(body, `"graph_ref":"g2"`) {
		t.Fatalf("status of g2 over HTTP: %d %s", code, body)
	}
}

// localHost is a domain.Host over a bare FSM.
type localHost struct{ *fsmtest.Local }

func (h localHost) Adapter(string) domain.Backend { return h }
func (h localHost) Logger() *slog.Logger          { return slog.New(slog.DiscardHandler) }

func routesOver(l *fsmtest.Local) *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range capacity.Domain().Routes(localHost{l}) {
		mux.Handle(r.Method+" "+r.Path, r.Handler)
	}
	return mux
}

func post(h http.Handler, path, body string) (int, string) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return w.Code, w.Body.String()
}

// graph_ref is an optional identifier like the others: the service
// refuses a bad one without proposing it, and the FSM (with graphs
// enabled) refuses it in a payload, as it does "default", which a
// payload spells "" (one spelling, one request digest).
func TestGraphRefBounds(t *testing.T) {
	f := newBoundsFixture(t)
	if err := f.l.Enable(fsm.ServedBy(capacity.Module())); err != nil {
		t.Fatal(err)
	}
	d := capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}
	for name, bad := range badIDs {
		what := "graph_ref with " + name
		acq := acquireIn(bad, "bad", d)
		f.refuse(t, "acquire with "+what, func() (any, error) { return f.s.Acquire(f.ctx, acq) })
		lr := f.leasesReq(f.ref())
		lr.GraphRef = bad
		f.refuse(t, "renew with "+what, func() (any, error) { return f.s.Renew(f.ctx, lr) })
		f.refuse(t, "release with "+what, func() (any, error) { return f.s.Release(f.ctx, lr) })
		rc := capacity.ReclaimRequest{TenantRef: "t", GraphRef: bad, MaxCount: 1}
		f.refuse(t, "reclaim with "+what, func() (any, error) { return f.s.Reclaim(f.ctx, rc) })
		up := capacity.UpdateCellRequest{TenantRef: "t", GraphRef: bad, Cell: capacity.CellSpec{CellID: "n"}}
		f.refuse(t, "update with "+what, func() (any, error) { return f.s.UpdateCell(f.ctx, up) })
		rd := capacity.ReadRequest{TenantRef: "t", GraphRef: bad, MaxCount: 1}
		f.refuse(t, "status with "+what, func() (any, error) { return f.s.Status(f.ctx, rd, fsm.Linearizable) })
		f.refuse(t, "reconcile with "+what, func() (any, error) { return f.s.Reconcile(f.ctx, rd, fsm.Linearizable) })
	}
	for _, bad := range []string{long, "a\x01b", capacity.DefaultGraph} {
		what := fmt.Sprintf("graph_ref %.12q", bad)
		withGraph := func(v any) map[string]any {
			var m map[string]any
			if err := log.Unmarshal(log.MustMarshal(v), &m); err != nil {
				t.Fatal(err)
			}
			m["graph_ref"] = bad
			return m
		}
		f.refuseRaw(t, "acquire with "+what, capacity.CmdAcquire, withGraph(rawOfAcquire(acquire("raw", d))))
		f.refuseRaw(t, "renew with "+what, capacity.CmdRenew, withGraph(rawOfLeases(f.leasesReq(f.ref()))))
		f.refuseRaw(t, "release with "+what, capacity.CmdRelease, withGraph(rawOfLeases(f.leasesReq(f.ref()))))
		f.refuseRaw(t, "reclaim with "+what, capacity.CmdReclaim, withGraph(rawReclaim{TenantRef: "t", MaxCount: 1}))
		f.refuseRaw(t, "update with "+what, capacity.CmdUpdateCell, withGraph(rawUpdate{TenantRef: "t", Cell: capacity.CellSpec{CellID: "n"}}))
		for _, q := range []fsm.QueryType{capacity.QueryStatus, capacity.QueryReconcile} {
			if _, err := f.l.Query(f.ctx, fsm.Query{Type: q, Payload: log.MustMarshal(withGraph(rawRead{TenantRef: "t", MaxCount: 1}))}); !errors.Is(err, errs.Invalid) {
				t.Errorf("query %d with %s (sent directly): %v, want invalid", q, what, err)
			}
		}
	}
	// 512 bytes is accepted.
	if _, err := f.s.UpdateCell(f.ctx, capacity.UpdateCellRequest{TenantRef: "t", GraphRef: max512, Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 1}}}); err != nil {
		t.Errorf("update in a graph of 512 bytes: %v", err)
	}
	checkStored(t, f.l.FSM)
}

// On a cluster of today's binary every member serves graphs, so the
// leader enables them: the Go API over the HTTP client and a JSON body
// both work in graph g2, apart from the default graph.
func TestGraphsOnACluster(t *testing.T) {
	ctx := context.Background()
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	remote := c.Remote()
	s := capacity.NewService(remote, remote)
	if err := s.Require(ctx); err != nil {
		t.Fatalf("the cluster does not enable this package's commands: %v", err)
	}
	for _, g := range []string{"", "g2"} {
		cellIn(t, s, g, "c", map[string]uint64{"gpu": 1})
		if _, err := s.Acquire(ctx, acquireIn(g, "k", capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 1})); err != nil {
			t.Fatalf("acquire under key k in graph %q: %v", g, err)
		}
	}
	body := `{"schema_version":"1","tenant_ref":"t","graph_ref":"g2","max_count":10}`
	res, err := http.Post(c.URL(c.WaitLeader(10*time.Second))+"/v1/capacity/reconcile", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var rc capacity.ReadResult
	if err := json.NewDecoder(res.Body).Decode(&rc); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("reconcile of g2 over HTTP: %d %v", res.StatusCode, err)
	}
	if len(rc.Leases) != 1 || rc.Leases[0].GraphRef != "g2" || len(rc.Cells) != 1 || rc.Cells[0].Classes[0].Used != 1 {
		t.Fatalf("reconcile of g2 over HTTP: %+v", rc)
	}
}
