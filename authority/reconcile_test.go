package authority_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// native is a Service over an in-process FSM the test holds, so that it
// can hash the state.
func native(t *testing.T) (*fsmtest.Local, *authority.Service) {
	t.Helper()
	local, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	return local, authority.NewService(local, local, policies(t))
}

func stateHash(t *testing.T, l *fsmtest.Local) string {
	t.Helper()
	idx, sum, err := l.FSM.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d/%x", idx, sum)
}

// rewriteView edits one record of view.json in place.
func rewriteView(t *testing.T, repo, conceptID string, edit func(p *authority.ProjectedRecord)) {
	t.Helper()
	recs := readViewFile(t, repo)
	found := false
	for i := range recs {
		if recs[i].ConceptID == conceptID {
			edit(&recs[i])
			found = true
		}
	}
	if !found {
		t.Fatalf("%s is not in the view", conceptID)
	}
	body, err := json.Marshal(map[string]any{"records": recs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "concepts", "view.json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReconcileClassifiesAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	local, svc := native(t)
	repo := t.TempDir()
	crs := authority.NewConceptReservationService(svc, repo)
	materialize := func(r *authority.Record) *authority.Record {
		t.Helper()
		m, err := crs.Materialize(ctx, materializeReq(r))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	// RMDD-1: reserved, nothing projected yet: nothing to report.
	mustReserve(t, svc, request("RMDD-1", "alice", "a1"))
	// RMDD-2: materialized natively, never projected: missing projection.
	mustStep(t, svc, mustReserve(t, svc, request("RMDD-2", "alice", "a2")), authority.Materialize)
	// RMDD-3: projected as materialized, then landed without projecting:
	// state mismatch in the fragment and in the view.
	r3 := mustStep(t, svc, materialize(mustReserve(t, svc, request("RMDD-3", "alice", "a3"))), authority.Land)
	// RMDD-4: projected and current: nothing to report.
	materialize(mustReserve(t, svc, request("RMDD-4", "alice", "a4")))
	// RMDD-5: projected, released, reclaimed by another request of the
	// same tenant: the projection is an orphan (another reservation).
	mustStep(t, svc, materialize(mustReserve(t, svc, request("RMDD-5", "alice", "a5"))), authority.Release)
	r5 := mustReserve(t, svc, request("RMDD-5", "bob", "b5"))
	// RMDD-6: projected, released, reclaimed by another tenant: orphan.
	mustStep(t, svc, materialize(mustReserve(t, svc, request("RMDD-6", "alice", "a6"))), authority.Release)
	mustReserve(t, svc, otherTenant(request("RMDD-6", "carol", "c6")))
	// RMDD-7: a projected record with no native claim at all: orphan.
	if err := crs.Project("alice", &authority.Record{ConceptID: "RMDD-7", Namespace: "RMDD", PolicyVersion: "2",
		ReservationID: "rsv-invented", Fence: 2, State: authority.Materialized, Visibility: authority.VisibilityNone}); err != nil {
		t.Fatal(err)
	}
	// RMDD-8: fragment current, the view stale: mismatch in the view only.
	r8 := mustStep(t, svc, materialize(mustReserve(t, svc, request("RMDD-8", "alice", "a8"))), authority.Land)
	if err := crs.Project("alice", r8); err != nil {
		t.Fatal(err)
	}
	// RMDD-10: landed natively, never projected: missing projection.
	r10 := mustStep(t, svc, mustReserve(t, svc, request("RMDD-10", "alice", "a10")), authority.Materialize)
	mustStep(t, svc, r10, authority.Land)
	// RMDD-9: tombstoned and projected at every step: nothing to report.
	r9 := materialize(mustReserve(t, svc, request("RMDD-9", "alice", "a9")))
	for _, act := range []authority.Action{authority.Land, authority.Tombstone} {
		r9 = mustStep(t, svc, r9, act)
		if err := crs.Project("alice", r9); err != nil {
			t.Fatal(err)
		}
	}
	// Last, so that no regeneration repairs it.
	rewriteView(t, repo, "RMDD-8", func(p *authority.ProjectedRecord) { p.State, p.Fence = authority.Materialized, 2 })

	hash := stateHash(t, local)
	files := repoFiles(t, repo)
	rep, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{
		TenantRef: "tenant-a", MaxRecords: 100,
		SourceMarkers: []string{"RMDD-4", "RMDD-99", "RMDD-6", "GOC-19", "RMDD-1"},
	})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	want := &authority.ReconcileReport{
		NativeRecords:      8, // RMDD-1..5, 8, 9, 10 and not RMDD-6
		ProjectedRecords:   len(allLines(fragmentLines(t, repo))),
		MissingProjections: []string{"RMDD-10", "RMDD-2"},
		OrphanRecords:      []string{"RMDD-5", "RMDD-6", "RMDD-7"},
		StateMismatches: []authority.Mismatch{
			{ConceptID: "RMDD-3", Where: "fragment", NativeState: authority.Landed, NativeFence: r3.Fence, ProjectedState: authority.Materialized, ProjectedFence: 2},
			{ConceptID: "RMDD-3", Where: "view", NativeState: authority.Landed, NativeFence: r3.Fence, ProjectedState: authority.Materialized, ProjectedFence: 2},
			{ConceptID: "RMDD-8", Where: "view", NativeState: authority.Landed, NativeFence: r8.Fence, ProjectedState: authority.Materialized, ProjectedFence: 2},
		},
		MarkersWithoutClaims: []string{"GOC-19", "RMDD-6", "RMDD-99"},
	}
	if !reflect.DeepEqual(rep, want) {
		got, _ := json.MarshalIndent(rep, "", " ")
		exp, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("report:\n%s\nwant:\n%s", got, exp)
	}
	if n := mustGet(t, svc, "RMDD-5", "tenant-a"); n.ReservationID != r5.ReservationID {
		t.Fatalf("RMDD-5 is held by %s, want bob's %s", n.ReservationID, r5.ReservationID)
	}
	if h := stateHash(t, local); h != hash {
		t.Fatalf("reconcile changed the FSM state: %s -> %s", hash, h)
	}
	if after := repoFiles(t, repo); !reflect.DeepEqual(after, files) {
		t.Fatal("reconcile changed the projection files")
	}

	// Another tenant sees only its own claim (RMDD-6) and every projected
	// record of tenant-a as an orphan, without any of tenant-a's claims.
	repB, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-b", MaxRecords: 100, SourceMarkers: []string{"RMDD-6", "RMDD-4"}})
	if err != nil {
		t.Fatal(err)
	}
	if repB.NativeRecords != 1 || len(repB.MissingProjections) != 0 || !reflect.DeepEqual(repB.MarkersWithoutClaims, []string{"RMDD-4"}) ||
		!reflect.DeepEqual(repB.OrphanRecords, []string{"RMDD-3", "RMDD-4", "RMDD-5", "RMDD-6", "RMDD-7", "RMDD-8", "RMDD-9"}) {
		t.Fatalf("tenant-b's report: %+v", repB)
	}
	if h := stateHash(t, local); h != hash {
		t.Fatalf("reconcile changed the FSM state: %s -> %s", hash, h)
	}

	// A bad marker is refused.
	_, err = crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 100, SourceMarkers: []string{"rmdd-4"}})
	wantCode(t, "bad marker", err, errs.CodeInvalid)
}

func TestReconcileEmptyRepository(t *testing.T) {
	_, svc := native(t)
	crs := authority.NewConceptReservationService(svc, t.TempDir())
	rep, err := crs.ReconcileProjection(context.Background(), authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := &authority.ReconcileReport{MissingProjections: []string{}, OrphanRecords: []string{}, StateMismatches: []authority.Mismatch{}, MarkersWithoutClaims: []string{}}
	if !reflect.DeepEqual(rep, want) {
		t.Fatalf("empty report: %+v", rep)
	}
}

func TestReconcileBounds(t *testing.T) {
	ctx := context.Background()
	_, svc := native(t)
	repo := t.TempDir()
	crs := authority.NewConceptReservationService(svc, repo)
	for i := 1; i <= 3; i++ {
		mustReserve(t, svc, request(fmt.Sprintf("RMDD-%d", i), "alice", fmt.Sprintf("a%d", i)))
	}
	markers := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("GOC-%d", i+1)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		req  authority.ReconcileRequest
	}{
		{"max_records zero", authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 0}},
		{"max_records negative", authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: -1}},
		{"max_records over the bound", authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: authority.MaxReconcileRecords + 1}},
		{"more native claims than max_records", authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 2}},
		{"more markers than max_records", authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 4, SourceMarkers: markers(5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := crs.ReconcileProjection(ctx, tc.req)
			wantCode(t, tc.name, err, errs.CodeInvalid)
		})
	}
	// At the bounds it answers.
	if _, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 3, SourceMarkers: markers(3)}); err != nil {
		t.Fatalf("three claims and three markers within max_records 3: %v", err)
	}
	if _, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: authority.MaxReconcileRecords}); err != nil {
		t.Fatalf("max_records at the bound: %v", err)
	}
	// More projected records than max_records.
	for i := 1; i <= 3; i++ {
		rec := mustGet(t, svc, fmt.Sprintf("RMDD-%d", i), "tenant-a")
		if err := crs.Project("alice", rec); err != nil {
			t.Fatal(err)
		}
		if err := crs.Project("bob", rec); err != nil {
			t.Fatal(err)
		}
	}
	_, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 5})
	wantCode(t, "six fragment lines, max_records 5", err, errs.CodeInvalid)
	if _, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 6}); err != nil {
		t.Fatalf("six fragment lines, max_records 6: %v", err)
	}
	// Many native claims, across several pages, counted exactly.
	_, svc2 := native(t)
	crs2 := authority.NewConceptReservationService(svc2, t.TempDir())
	n := nodes.MaxLabelPage + 5
	for i := 1; i <= n; i++ {
		mustReserve(t, svc2, request(fmt.Sprintf("RMDD-%d", i), "alice", "bulk"))
	}
	rep, err := crs2.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: n})
	if err != nil || rep.NativeRecords != n {
		t.Fatalf("%d claims over two pages: %+v %v", n, rep, err)
	}
	_, err = crs2.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: n - 1})
	wantCode(t, "one claim more than max_records, on the second page", err, errs.CodeInvalid)
}

// listFunc is an Authority whose List a test replaces.
type listFunc struct {
	authority.Authority
	calls atomic.Int64
	list  func(n int64, req authority.ListRequest) (*authority.RecordPage, error)
}

func (l *listFunc) List(ctx context.Context, req authority.ListRequest) (*authority.RecordPage, error) {
	return l.list(l.calls.Add(1), req)
}

// A backend that does not page correctly makes reconcile fail, quickly,
// instead of looping.
func TestReconcileRefusesMisbehavingBackends(t *testing.T) {
	ctx := context.Background()
	_, svc := native(t)
	for i := 1; i <= 3; i++ {
		mustReserve(t, svc, request(fmt.Sprintf("RMDD-%d", i), "alice", "bulk"))
	}
	page1, err := svc.List(ctx, authority.ListRequest{TenantRef: "tenant-a", Limit: 1})
	if err != nil || len(page1.Records) != 1 || page1.NextCursor == "" {
		t.Fatalf("first page: %+v %v", page1, err)
	}
	const maxRecords = 10
	for _, tc := range []struct {
		name string
		// maxCalls: a repeated cursor is refused when it repeats, not
		// only once the page bound runs out.
		maxCalls int64
		list     func(l *listFunc) func(n int64, req authority.ListRequest) (*authority.RecordPage, error)
	}{
		{"ignores after", 2, func(l *listFunc) func(int64, authority.ListRequest) (*authority.RecordPage, error) {
			return func(_ int64, req authority.ListRequest) (*authority.RecordPage, error) {
				return svc.List(ctx, authority.ListRequest{TenantRef: req.TenantRef, Limit: 1})
			}
		}},
		{"the same page and cursor forever", 2, func(l *listFunc) func(int64, authority.ListRequest) (*authority.RecordPage, error) {
			return func(int64, authority.ListRequest) (*authority.RecordPage, error) { return page1, nil }
		}},
		{"a cursor with control characters", 2, func(l *listFunc) func(int64, authority.ListRequest) (*authority.RecordPage, error) {
			return func(_ int64, req authority.ListRequest) (*authority.RecordPage, error) {
				p, err := svc.List(ctx, req)
				if err != nil {
					return nil, err
				}
				return &authority.RecordPage{Records: p.Records, NextCursor: "n1.\x00\x1b[2J"}, nil
			}
		}},
		{"fresh control-character cursors, ignoring after", maxRecords + 2, func(l *listFunc) func(int64, authority.ListRequest) (*authority.RecordPage, error) {
			return func(n int64, _ authority.ListRequest) (*authority.RecordPage, error) {
				return &authority.RecordPage{Records: page1.Records, NextCursor: fmt.Sprintf("c\x00%d", n)}, nil
			}
		}},
		{"empty pages with fresh cursors", maxRecords + 2, func(l *listFunc) func(int64, authority.ListRequest) (*authority.RecordPage, error) {
			return func(n int64, _ authority.ListRequest) (*authority.RecordPage, error) {
				return &authority.RecordPage{Records: []*authority.Record{}, NextCursor: fmt.Sprintf("n1.page%d", n)}, nil
			}
		}},
		{"endless new records", maxRecords + 1, func(l *listFunc) func(int64, authority.ListRequest) (*authority.RecordPage, error) {
			return func(n int64, _ authority.ListRequest) (*authority.RecordPage, error) {
				r := *page1.Records[0]
				r.ConceptID = fmt.Sprintf("RMDD-%d", 100+n)
				return &authority.RecordPage{Records: []*authority.Record{&r}, NextCursor: fmt.Sprintf("n1.page%d", n)}, nil
			}
		}},
		{"an error", 1, func(l *listFunc) func(int64, authority.ListRequest) (*authority.RecordPage, error) {
			return func(int64, authority.ListRequest) (*authority.RecordPage, error) {
				return nil, errs.New(errs.CodeUnavailable, "no quorum")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &listFunc{Authority: svc}
			l.list = tc.list(l)
			crs := authority.NewConceptReservationService(l, t.TempDir())
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: maxRecords})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("reconcile over a misbehaving backend succeeded")
				}
				t.Logf("%s: %v after %d calls", tc.name, err, l.calls.Load())
			case <-time.After(10 * time.Second):
				t.Fatalf("reconcile still running after 10s and %d List calls", l.calls.Load())
			}
			if n := l.calls.Load(); n > tc.maxCalls {
				t.Fatalf("reconcile called List %d times with max_records %d, want at most %d", n, maxRecords, tc.maxCalls)
			}
		})
	}
}

// pageReader is an fsm.Reader that answers node-by-label queries from a
// real FSM and then tampers with the page.
type pageReader struct {
	local  *fsmtest.Local
	calls  atomic.Int64
	tamper func(q *nodes.LabelQuery, page *nodes.Page)
	// ignoreAfter queries the FSM as if every call asked for page one.
	ignoreAfter bool
}

func (r *pageReader) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	if q.Type != nodes.QueryByLabel {
		return r.local.Query(ctx, q)
	}
	r.calls.Add(1)
	var lq nodes.LabelQuery
	if err := log.Unmarshal(q.Payload, &lq); err != nil {
		return nil, err
	}
	asked := lq
	if r.ignoreAfter {
		lq.After = ""
	}
	payload, err := log.Marshal(lq)
	if err != nil {
		return nil, err
	}
	raw, err := r.local.Query(ctx, fsm.Query{Type: q.Type, Payload: payload, Stale: q.Stale})
	if err != nil {
		return nil, err
	}
	var page nodes.Page
	if err := log.Unmarshal(raw, &page); err != nil {
		return nil, err
	}
	if r.tamper != nil {
		r.tamper(&asked, &page)
	}
	return log.Marshal(page)
}

// Service.List does not trust the backend's paging.
func TestServiceListRefusesBadPages(t *testing.T) {
	ctx := context.Background()
	local, svc := native(t)
	for i := 1; i <= 4; i++ {
		mustReserve(t, svc, request(fmt.Sprintf("RMDD-%d", i), "alice", "bulk"))
	}
	mustReserve(t, svc, otherTenant(request("RMDD-9", "carol", "c9")))
	other, err := local.Query(ctx, fsm.Query{Type: nodes.QueryGet, Payload: mustMarshal(t, nodes.GetQuery{NodeID: "concept-reservation:RMDD-9"})})
	if err != nil {
		t.Fatal(err)
	}
	var otherNode nodes.Record
	if err := log.Unmarshal(other, &otherNode); err != nil {
		t.Fatal(err)
	}

	// A correct backend pages through every claim, in order.
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 4 {
			t.Fatal("paging did not end")
		}
		p, err := svc.List(ctx, authority.ListRequest{TenantRef: "tenant-a", After: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Records {
			ids = append(ids, r.ConceptID)
		}
		if p.NextCursor == "" {
			break
		}
		if p.NextCursor == cursor {
			t.Fatal("cursor did not move")
		}
		cursor = p.NextCursor
	}
	if !reflect.DeepEqual(ids, []string{"RMDD-1", "RMDD-2", "RMDD-3", "RMDD-4"}) {
		t.Fatalf("paged ids %v", ids)
	}

	for _, tc := range []struct {
		name        string
		ignoreAfter bool
		limit       int
		tamper      func(q *nodes.LabelQuery, p *nodes.Page)
		reconcile   bool // the tampering also spoils a last page
	}{
		{name: "ignores after", ignoreAfter: true, limit: 2},
		{name: "returns the cursor it was given", limit: 2, tamper: func(q *nodes.LabelQuery, p *nodes.Page) {
			if q.After != "" {
				p.NextCursor = q.After
			}
		}},
		{name: "cursor with control characters", limit: 2, reconcile: true, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.NextCursor = "n1.abc\x00def" }},
		{name: "cursor with a newline", limit: 2, reconcile: true, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.NextCursor = "n1.abc\ndef" }},
		{name: "cursor too long", limit: 2, reconcile: true, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.NextCursor = "n1." + strings.Repeat("a", 2000) }},
		{name: "empty page with a cursor", limit: 2, reconcile: true, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.Nodes = nil; p.NextCursor = "n1.more" }},
		{name: "more nodes than the limit", limit: 2, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.Nodes = append(p.Nodes, p.Nodes...) }},
		{name: "a node twice", limit: 3, reconcile: true, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.Nodes[1] = p.Nodes[0] }},
		{name: "nodes out of order", limit: 3, reconcile: true, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.Nodes[0], p.Nodes[1] = p.Nodes[1], p.Nodes[0] }},
		{name: "a node that is no record", limit: 2, reconcile: true, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) {
			p.Nodes[0].Properties = map[string]json.RawMessage{"schema": json.RawMessage(`"other/v1"`)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &pageReader{local: local, ignoreAfter: tc.ignoreAfter, tamper: tc.tamper}
			bad := authority.NewService(local, r, policies(t))
			cursor := ""
			var err error
			for i := 0; i < 5; i++ {
				var p *authority.RecordPage
				p, err = bad.List(ctx, authority.ListRequest{TenantRef: "tenant-a", After: cursor, Limit: tc.limit})
				if err != nil {
					break
				}
				if p.NextCursor == "" {
					t.Fatalf("page %d ended the listing: %+v", i, p)
				}
				cursor = p.NextCursor
			}
			if err == nil {
				t.Fatalf("List accepted five pages from a backend that %s", tc.name)
			}
			wantCode(t, tc.name, err, errs.CodeInternal)
			if r.calls.Load() > 2 {
				t.Fatalf("List was refused only after %d pages", r.calls.Load())
			}
			// Reconcile over it fails as well (it asks for full pages, so
			// only tamperings that apply to the last page matter there).
			if tc.reconcile {
				crs := authority.NewConceptReservationService(bad, t.TempDir())
				_, err := crs.ReconcileProjection(ctx, authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 100})
				wantCode(t, "reconcile over a backend whose pages are bad", err, errs.CodeInternal)
			}
		})
	}

	// A node of another tenant slipped into the page is not listed.
	r := &pageReader{local: local, tamper: func(_ *nodes.LabelQuery, p *nodes.Page) { p.Nodes = append(p.Nodes, otherNode) }}
	p, err := authority.NewService(local, r, policies(t)).List(ctx, authority.ListRequest{TenantRef: "tenant-a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range p.Records {
		if rec.TenantRef != "tenant-a" {
			t.Fatalf("list of tenant-a returned %s of %s", rec.ConceptID, rec.TenantRef)
		}
	}
	if len(p.Records) != 4 {
		t.Fatalf("list of tenant-a: %d records", len(p.Records))
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := log.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
