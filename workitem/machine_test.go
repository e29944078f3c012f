package workitem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// The choices a step draws from: few enough that ids, keys and
// dependencies collide often.
var (
	mTenants    = []string{"t", "u"}
	mGraphs     = []string{"", "default", "g2"}
	mIDs        = []string{"", "", "", "x1", "x2", "x3", "x4"}
	mKinds      = []string{"a", "b"}
	mPriorities = []int64{-1024, -1, 0, 0, 3, 1024}
	mCaps       = []int64{1, 2, 3, 5, 100, 100}
	mTTLs       = []int64{500, 5_000, 60_000}
	mAdvances   = []time.Duration{100 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second, 70 * time.Second, 25 * time.Hour}
	mMetadata   = []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(`{"b": 1, "a": [true, null]}`)}
	// mPrincipals: the embedding host most of the time, and members of t
	// and u, and a reader of t, now and then.
	mPrincipals = []identity.Principal{{}, {}, {}, member, member2, outsider, reader}
)

type wiMachine struct {
	ctx  context.Context
	l    *fsmtest.Local
	svc  *workitem.Service
	m    *wiModel
	keys int
	// submitted remembers keyed admissions to retry or reuse.
	submitted []keyedSubmit
	claims    []keyedClaim
}

type keyedSubmit struct {
	p     identity.Principal
	batch bool
	one   workitem.SubmitRequest
	many  workitem.BatchRequest
}

type keyedClaim struct {
	p identity.Principal
	r workitem.ClaimRequest
}

func newMachine(t *rapid.T) *wiMachine {
	l, err := fsmtest.New(workitem.Module())
	if err != nil {
		t.Fatal(err)
	}
	enable(t, l) // the newest versions: keys are the tenant's
	mc := &wiMachine{ctx: context.Background(), l: l, svc: workitem.NewService(l, l), m: newModel(fsmtest.Epoch)}
	mc.m.apply() // the enable command, and its change event
	mc.m.emit()
	return mc
}

func (mc *wiMachine) key() string {
	mc.keys++
	return fmt.Sprintf("k%d", mc.keys)
}

// ids lists every id the model knows in any tenant, and one nobody has.
func (mc *wiMachine) ids() []string {
	out := []string{"ghost"}
	for k := range mc.m.items {
		out = append(out, k.id)
	}
	sort.Strings(out)
	return out
}

// spec draws one item; earlier lists ids an item may depend on besides
// those of the model.
func (mc *wiMachine) spec(t *rapid.T, label string, earlier []string) workitem.SubmitRequest {
	r := workitem.SubmitRequest{CommandDigest: digest, Kind: rapid.SampledFrom(mKinds).Draw(t, label+"kind"),
		Priority: rapid.SampledFrom(mPriorities).Draw(t, label+"priority"), InputRef: "in", PolicyDigest: policyDigest, CatalogDigest: catalogDigest,
		ModelDigest: modelDigest, MaxAttempts: rapid.Int64Range(1, 3).Draw(t, label+"attempts"),
		MaxTenantInFlight: rapid.SampledFrom(mCaps).Draw(t, label+"cap"), WorkItemID: rapid.SampledFrom(mIDs).Draw(t, label+"id"),
		Metadata: rapid.SampledFrom(mMetadata).Draw(t, label+"metadata")}
	if rapid.IntRange(0, 3).Draw(t, label+"has_deadline") == 0 {
		d := mc.m.clock/1000 + rapid.SampledFrom([]int64{-1, 2, 30, 100_000}).Draw(t, label+"deadline")
		r.DeadlineUnix = &d
	}
	pool := append(mc.ids(), earlier...)
	for n := rapid.IntRange(0, 3).Draw(t, label+"deps"); n > 0; n-- {
		d := rapid.SampledFrom(pool).Draw(t, label+"dep")
		if !containsStr(r.DependsOn, d) {
			r.DependsOn = append(r.DependsOn, d)
		}
	}
	if rapid.Bool().Draw(t, label+"provenance") {
		r.ProvenanceRefs = []string{"prov-1", "prov-2"}
	}
	return r
}

func containsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// normalized is a request as its command carries it (graph defaulted,
// metadata canonical, a child's tenant and graph dropped), for the
// model's fingerprint of keyed requests.
func normalized(r workitem.SubmitRequest) workitem.SubmitRequest {
	r.TenantRef, r.GraphRef = "", ""
	if len(r.Metadata) == 0 || string(r.Metadata) == "{}" {
		r.Metadata = nil
	} else {
		r.Metadata = json.RawMessage(`{"a":[true,null],"b":1}`)
	}
	if len(r.DependsOn) == 0 {
		r.DependsOn = nil
	}
	if len(r.ProvenanceRefs) == 0 {
		r.ProvenanceRefs = nil
	}
	return r
}

func (mc *wiMachine) submit(t *rapid.T) {
	p := rapid.SampledFrom(mPrincipals).Draw(t, "principal")
	var r workitem.SubmitRequest
	if n := len(mc.submitted); n > 0 && rapid.IntRange(0, 5).Draw(t, "retry") == 0 {
		old := mc.submitted[rapid.IntRange(0, n-1).Draw(t, "which")]
		if old.batch {
			mc.batchWith(t, old.p, old.many)
			return
		}
		p, r = old.p, old.one
		if rapid.Bool().Draw(t, "change") {
			r.Priority = (r.Priority + 1) % workitem.MaxPriority // the same key for another request
		}
	} else {
		r = mc.spec(t, "", nil)
		r.TenantRef, r.GraphRef, r.IdempotencyKey = rapid.SampledFrom(mTenants).Draw(t, "tenant"), rapid.SampledFrom(mGraphs).Draw(t, "graph"), mc.key()
	}
	graph := graphOr(r.GraphRef)
	mc.m.apply()
	lk := ledgerKey("admit", r.TenantRef, graph, r.IdempotencyKey)
	fp := fingerprint("one", normalized(r))
	var want *workitem.SubmitResult
	var werr *mErr
	replay := false
	if prev, e, done := mc.m.consult(p, r.TenantRef, lk, fp); done {
		werr, replay = e, e == nil
		if prev != nil {
			first := prev.(workitem.SubmitResult)
			want = &first
		}
	} else {
		var res *workitem.BatchResult
		if res, werr = mc.m.admit(p, r.IdempotencyKey, r.TenantRef, graph, []workitem.SubmitRequest{r}); werr == nil {
			want = &res.Results[0]
			mc.m.ledger[lk] = &mIdem{fingerprint: fp, result: *want}
			mc.submitted = append(mc.submitted, keyedSubmit{p: p, one: r})
		}
	}
	got, err := mc.svc.Submit(fsm.WithPrincipal(mc.ctx, p), r)
	what := fmt.Sprintf("submit %s as %q", r.IdempotencyKey, p.ID)
	if werr != nil {
		wantErr(t, what, got, err, werr)
		return
	}
	if err != nil || got.Replayed != replay {
		t.Fatalf("%s: %+v %v, want replayed %t", what, got, err, replay)
	}
	g := *got
	g.Replayed = false
	if diff := cmp.Diff(*want, g); diff != "" {
		t.Fatalf("%s (-model +got):\n%s", what, diff)
	}
}

func (mc *wiMachine) batch(t *rapid.T) {
	if n := len(mc.submitted); n > 0 && rapid.IntRange(0, 4).Draw(t, "retry") == 0 {
		old := mc.submitted[rapid.IntRange(0, n-1).Draw(t, "which")]
		if old.batch {
			r := old.many
			if rapid.Bool().Draw(t, "change") {
				r.Requests = append([]workitem.SubmitRequest(nil), r.Requests...)
				r.Requests[0].Kind += "x"
			}
			mc.batchWith(t, old.p, r)
			return
		}
	}
	p := rapid.SampledFrom(mPrincipals).Draw(t, "principal")
	r := workitem.BatchRequest{TenantRef: rapid.SampledFrom(mTenants).Draw(t, "tenant"), GraphRef: rapid.SampledFrom(mGraphs).Draw(t, "graph"), IdempotencyKey: mc.key()}
	var earlier []string
	for i, n := 0, rapid.IntRange(1, 4).Draw(t, "children"); i < n; i++ {
		c := mc.spec(t, fmt.Sprintf("c%d_", i), earlier)
		if rapid.IntRange(0, 3).Draw(t, "child_scope") == 0 {
			c.TenantRef, c.GraphRef = r.TenantRef, graphOr(r.GraphRef)
		}
		if rapid.IntRange(0, 3).Draw(t, "child_key") == 0 {
			c.IdempotencyKey = fmt.Sprintf("child-%d", i)
		}
		id := c.WorkItemID
		if id == "" {
			id = fmt.Sprintf("wi-%d-%d", mc.m.index+1, i)
		}
		earlier = append(earlier, id)
		r.Requests = append(r.Requests, c)
	}
	mc.batchWith(t, p, r)
}

func (mc *wiMachine) batchWith(t *rapid.T, p identity.Principal, r workitem.BatchRequest) {
	graph := graphOr(r.GraphRef)
	what := fmt.Sprintf("batch %s of %d as %q", r.IdempotencyKey, len(r.Requests), p.ID)
	// The service refuses two children of one explicit id itself.
	ids := map[string]bool{}
	for _, c := range r.Requests {
		if c.WorkItemID != "" && ids[c.WorkItemID] {
			before := len(mc.l.Log())
			got, err := mc.svc.SubmitBatch(fsm.WithPrincipal(mc.ctx, p), r)
			wantErr(t, what, got, err, &mErr{code: errs.CodeInvalid})
			if len(mc.l.Log()) != before {
				t.Fatalf("%s: the service proposed a batch it must refuse", what)
			}
			return
		}
		ids[c.WorkItemID] = true
	}
	mc.m.apply()
	norm := make([]workitem.SubmitRequest, len(r.Requests))
	for i, c := range r.Requests {
		norm[i] = normalized(c)
		norm[i].IdempotencyKey = c.IdempotencyKey
	}
	lk := ledgerKey("admit", r.TenantRef, graph, r.IdempotencyKey)
	fp := fingerprint("batch", norm)
	var want *workitem.BatchResult
	var werr *mErr
	replay := false
	if prev, e, done := mc.m.consult(p, r.TenantRef, lk, fp); done {
		werr, replay = e, e == nil
		if prev != nil {
			first := prev.(workitem.BatchResult)
			want = &first
		}
	} else if want, werr = mc.m.admit(p, r.IdempotencyKey, r.TenantRef, graph, r.Requests); werr == nil {
		mc.m.ledger[lk] = &mIdem{fingerprint: fp, result: *want}
		mc.submitted = append(mc.submitted, keyedSubmit{p: p, batch: true, many: r})
	}
	got, err := mc.svc.SubmitBatch(fsm.WithPrincipal(mc.ctx, p), r)
	if werr != nil {
		wantErr(t, what, got, err, werr)
		return
	}
	if err != nil || got.Replayed != replay {
		t.Fatalf("%s: %+v %v, want replayed %t", what, got, err, replay)
	}
	g := *got
	g.Replayed = false
	g.Results = append([]workitem.SubmitResult(nil), g.Results...)
	for i := range g.Results {
		if g.Results[i].Replayed != replay {
			t.Fatalf("%s: child %d replayed %t", what, i, g.Results[i].Replayed)
		}
		g.Results[i].Replayed = false
	}
	if diff := cmp.Diff(*want, g); diff != "" {
		t.Fatalf("%s (-model +got):\n%s", what, diff)
	}
}

func (mc *wiMachine) claim(t *rapid.T) {
	var p identity.Principal
	var r workitem.ClaimRequest
	if n := len(mc.claims); n > 0 && rapid.IntRange(0, 5).Draw(t, "retry") == 0 {
		old := mc.claims[rapid.IntRange(0, n-1).Draw(t, "which")]
		p, r = old.p, old.r
	} else {
		p = rapid.SampledFrom(mPrincipals).Draw(t, "principal")
		r = workitem.ClaimRequest{TenantRef: rapid.SampledFrom(mTenants).Draw(t, "tenant"), GraphRef: rapid.SampledFrom(mGraphs).Draw(t, "graph"),
			OwnerRef: "w-" + p.ID, TTLMs: rapid.SampledFrom(mTTLs).Draw(t, "ttl")}
		switch rapid.IntRange(0, 5).Draw(t, "filter") {
		case 0:
			r.Kinds = []string{rapid.SampledFrom(mKinds).Draw(t, "kind")}
		case 1:
			r.Kinds = []string{"b", "a"}
		case 2:
			r.WorkItemID = rapid.SampledFrom(mc.ids()).Draw(t, "claim_id")
		}
		if rapid.IntRange(0, 3).Draw(t, "keyed") == 0 {
			r.IdempotencyKey = mc.key()
		}
	}
	mc.m.apply()
	var want *workitem.ClaimResult
	var werr *mErr
	replay := false
	lk := ledgerKey("claim", r.TenantRef, graphOr(r.GraphRef), r.IdempotencyKey)
	fp := fingerprint("claim", workitem.ClaimRequest{TenantRef: r.TenantRef, GraphRef: graphOr(r.GraphRef), OwnerRef: r.OwnerRef, Kinds: r.Kinds, WorkItemID: r.WorkItemID, TTLMs: r.TTLMs})
	if prev, e, done := mc.m.consult(p, r.TenantRef, lk, fp); r.IdempotencyKey != "" && done {
		werr, replay = e, e == nil
		if prev != nil {
			first := prev.(workitem.ClaimResult)
			want = &first
		}
	} else if want, werr = mc.m.claim(p, r); werr == nil && r.IdempotencyKey != "" {
		mc.m.ledger[lk] = &mIdem{fingerprint: fp, result: *want}
		mc.claims = append(mc.claims, keyedClaim{p, r})
	}
	got, err := mc.svc.Claim(fsm.WithPrincipal(mc.ctx, p), r)
	what := fmt.Sprintf("claim %+v as %q", r, p.ID)
	if werr != nil {
		wantErr(t, what, got, err, werr)
		return
	}
	if err != nil || got.Replayed != replay {
		t.Fatalf("%s: %+v %v, want replayed %t", what, got, err, replay)
	}
	g := *got
	g.Replayed = false
	if diff := cmp.Diff(*want, g, cmp.Transformer("tidy", tidy)); diff != "" {
		t.Fatalf("%s (-model +got):\n%s", what, diff)
	}
}

// pickItem draws an item of the model (claimed ones more often), or a
// missing one.
func (mc *wiMachine) pickItem(t *rapid.T) (string, string) {
	var claimed, all []mKey
	for k, it := range mc.m.items {
		all = append(all, k)
		if it.Status == workitem.StatusClaimed {
			claimed = append(claimed, k)
		}
	}
	less := func(s []mKey) func(i, j int) bool {
		return func(i, j int) bool {
			return s[i].tenant < s[j].tenant || s[i].tenant == s[j].tenant && s[i].id < s[j].id
		}
	}
	sort.Slice(all, less(all))
	sort.Slice(claimed, less(claimed))
	switch {
	case len(claimed) > 0 && rapid.IntRange(0, 2).Draw(t, "pick_claimed") > 0:
		k := rapid.SampledFrom(claimed).Draw(t, "item")
		return k.tenant, k.id
	case len(all) > 0 && rapid.IntRange(0, 5).Draw(t, "pick_missing") > 0:
		k := rapid.SampledFrom(all).Draw(t, "item")
		return k.tenant, k.id
	}
	return "t", "ghost"
}

func (mc *wiMachine) complete(t *rapid.T) {
	tenant, id := mc.pickItem(t)
	r := workitem.CompleteRequest{TenantRef: tenant, WorkItemID: id, Attempt: 1, Fence: 1,
		Outcome: rapid.SampledFrom([]string{workitem.StatusSucceeded, workitem.StatusSucceeded, workitem.StatusFailed}).Draw(t, "outcome")}
	p := identity.Principal{}
	if it := mc.m.items[mKey{tenant, id}]; it != nil && it.Attempt > 0 {
		r.Attempt, r.Fence = it.Attempt, it.Fence
		if rapid.IntRange(0, 2).Draw(t, "as_claimer") == 0 {
			p = rapid.SampledFrom(mPrincipals).Draw(t, "principal")
		}
		switch rapid.IntRange(0, 7).Draw(t, "spoil") {
		case 0:
			r.Fence++
		case 1:
			r.Fence--
		case 2:
			r.Attempt--
		}
	}
	if rapid.Bool().Draw(t, "with_result") {
		r.ResultRef = "out:" + id
	}
	if r.Attempt < 1 || r.Fence < 1 {
		r.Attempt, r.Fence = 1, 1
	}
	mc.m.apply()
	want, werr := mc.m.complete(p, r)
	got, err := mc.svc.Complete(fsm.WithPrincipal(mc.ctx, p), r)
	mc.itemResult(t, fmt.Sprintf("complete %+v as %q", r, p.ID), want, werr, got, err)
}

func (mc *wiMachine) cancel(t *rapid.T) {
	tenant, id := mc.pickItem(t)
	p := rapid.SampledFrom(mPrincipals).Draw(t, "principal")
	r := workitem.CancelRequest{TenantRef: tenant, WorkItemID: id, Reason: "operator"}
	mc.m.apply()
	want, werr := mc.m.cancel(p, r)
	got, err := mc.svc.Cancel(fsm.WithPrincipal(mc.ctx, p), r)
	mc.itemResult(t, fmt.Sprintf("cancel %s/%s as %q", tenant, id, p.ID), want, werr, got, err)
}

func (mc *wiMachine) itemResult(t *rapid.T, what string, want *workitem.WorkItem, werr *mErr, got *workitem.ItemResult, err error) {
	if werr != nil {
		wantErr(t, what, got, err, werr)
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if diff := cmp.Diff(tidy(*want), tidy(got.WorkItem)); diff != "" {
		t.Fatalf("%s (-model +got):\n%s", what, diff)
	}
}

// wantErr requires err to be the model's error and got to be nil.
func wantErr(t *rapid.T, what string, got any, err error, want *mErr) {
	t.Helper()
	e := errs.From(err)
	if e == nil || e.Code != want.code {
		t.Fatalf("%s: %+v %v, want error %s", what, got, err, want)
	}
	if want.reason != "" && e.Detail["reason"] != want.reason {
		t.Fatalf("%s: %v with detail %v, want reason %s", what, err, e.Detail, want.reason)
	}
	if f, _ := e.Detail["field"].(string); want.field != "" && !strings.HasSuffix(f, want.field) {
		t.Fatalf("%s: %v with detail %v, want field %s", what, err, e.Detail, want.field)
	}
}

func (mc *wiMachine) advance(t *rapid.T) {
	if rapid.IntRange(0, 9).Draw(t, "clock_back") == 0 {
		mc.m.clock -= 3000 // the proposer's clock may go back; the FSM's may not
		mc.l.SetClock(mc.m.clock)
		return
	}
	d := rapid.SampledFrom(mAdvances).Draw(t, "advance")
	mc.m.clock += d.Milliseconds()
	mc.l.Advance(d)
}

func (mc *wiMachine) tick(t *rapid.T) {
	budget := rapid.IntRange(1, 4).Draw(t, "budget")
	mc.m.apply()
	mc.m.tick(budget)
	res, err := mc.l.Propose(mc.ctx, log.Command{Type: fsm.CmdTick, Version: 1,
		Payload: log.MustMarshal(fsm.Tick{Budget: budget, FeedRetain: 1 << 30, IdemRetentionMs: 1 << 40})})
	if err != nil || res.Err != nil {
		t.Fatalf("tick: %v %v", err, res.Err)
	}
}

// reads compares Get and List (paged small) with the model.
func (mc *wiMachine) reads(t *rapid.T) {
	tenant := rapid.SampledFrom(mTenants).Draw(t, "tenant")
	graph := rapid.SampledFrom(mGraphs[1:]).Draw(t, "graph")
	status := rapid.SampledFrom([]string{"", workitem.StatusPending, workitem.StatusClaimed, workitem.StatusSucceeded}).Draw(t, "status")
	var want []workitem.Summary
	for _, it := range mc.m.items {
		if it.TenantRef == tenant && it.GraphRef == graph && (status == "" || it.Status == status) {
			want = append(want, summary(*it))
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].CommandSequence < want[j].CommandSequence })
	var got []workitem.Summary
	after := ""
	limit := rapid.IntRange(1, 3).Draw(t, "limit")
	for page := 0; ; page++ {
		res, err := mc.svc.List(mc.ctx, workitem.ListRequest{TenantRef: tenant, GraphRef: graph, Status: status, After: after, Limit: limit}, fsm.Linearizable)
		if err != nil || page > 100 {
			t.Fatalf("list %s/%s %s page %d: %v", tenant, graph, status, page, err)
		}
		got = append(got, res.WorkItems...)
		if after = res.NextCursor; after == "" {
			break
		}
	}
	if len(want)+len(got) > 0 {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("list %s/%s %q (-model +got):\n%s", tenant, graph, status, diff)
		}
	}
	for _, w := range want {
		res, err := mc.svc.Get(mc.ctx, workitem.GetRequest{TenantRef: tenant, WorkItemID: w.WorkItemID}, fsm.Stale)
		if err != nil || !cmp.Equal(tidy(res.WorkItem), tidy(*mc.m.items[mKey{tenant, w.WorkItemID}])) {
			t.Fatalf("get %s/%s: %+v %v", tenant, w.WorkItemID, res, err)
		}
	}
	if _, err := mc.svc.Get(mc.ctx, workitem.GetRequest{TenantRef: tenant, WorkItemID: "ghost"}, fsm.Stale); !errors.Is(err, errs.NotFound) {
		t.Fatalf("get of a missing item: %v", err)
	}
}

func summary(it workitem.WorkItem) workitem.Summary {
	return workitem.Summary{WorkItemID: it.WorkItemID, GraphRef: it.GraphRef, CommandSequence: it.CommandSequence, Kind: it.Kind,
		Priority: it.Priority, Status: it.Status, Dependencies: it.Dependencies, Attempt: it.Attempt, MaxAttempts: it.MaxAttempts,
		Fence: it.Fence, OwnerRef: it.OwnerRef, ClaimExpiresAtMs: it.ClaimExpiresAtMs, Reason: it.Reason,
		CreatedAtMs: it.CreatedAtMs, UpdatedAtMs: it.UpdatedAtMs, EndedAtMs: it.EndedAtMs}
}

// snapshot restores the FSM from its own snapshot: the same state hash,
// and the same snapshot bytes again.
func (mc *wiMachine) snapshot(t *rapid.T) {
	var buf bytes.Buffer
	if err := mc.l.FSM.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	first := bytes.Clone(buf.Bytes())
	index, hash, err := mc.l.FSM.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.l.FSM.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if i, h, err := mc.l.FSM.StateHash(); err != nil || i != index || h != hash {
		t.Fatalf("restored state %d %x, was %d %x (%v)", i, h, index, hash, err)
	}
	var again bytes.Buffer
	if err := mc.l.FSM.WriteSnapshot(&again); err != nil || !bytes.Equal(first, again.Bytes()) {
		t.Fatalf("the restored FSM writes other snapshot bytes (%v)", err)
	}
}

// check runs after every step: the tables keep their invariants and are
// exactly the model's.
func (mc *wiMachine) check(t *rapid.T) {
	t.Helper()
	st := checkStored(t, mc.l.FSM)
	if bad := mc.m.compare(st); len(bad) > 0 {
		t.Fatalf("stored state differs from the model:\n  %s", strings.Join(bad, "\n  "))
	}
	if n := uint64(len(mc.l.Log())); n != mc.m.index {
		t.Fatalf("%d log entries; the model counts %d", n, mc.m.index)
	}
}

// TestWorkItemModel drives the service over a bare FSM with random
// commands and the model alongside; after every step the stored tables
// must be the model's and keep every invariant.
func TestWorkItemModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mc := newMachine(t)
		actions := map[string]func(*rapid.T){
			"submit": mc.submit, "batch": mc.batch, "claim": mc.claim, "complete": mc.complete, "cancel": mc.cancel,
			"advance": mc.advance, "tick": mc.tick, "reads": mc.reads, "snapshot": mc.snapshot,
		}
		weights := map[string]int{"submit": 6, "batch": 3, "claim": 5, "complete": 4, "cancel": 2, "advance": 3, "tick": 3, "reads": 1, "snapshot": 1}
		var names []string
		for name := range actions {
			for i := 0; i < weights[name]; i++ {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for i, n := 0, rapid.IntRange(1, 120).Draw(t, "steps"); i < n; i++ {
			actions[rapid.SampledFrom(names).Draw(t, "action")](t)
			mc.check(t)
		}
	})
}
