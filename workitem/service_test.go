package workitem_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/google/go-cmp/cmp"
)

// The lifecycle: submit with dependencies, claim in priority then
// sequence order, complete with the claim's fence, dependents become
// claimable, replay and idempotency conflict, cancel.
func TestLifecycle(t *testing.T) {
	l, s := newService(t)
	a := mustSubmit(t, s, req("a"))
	if a.Status != workitem.StatusPending || !a.Created || a.Replayed || a.CommandSequence != 1 || a.WorkItemID != "wi-1-0" ||
		a.Quota != (workitem.Quota{InFlight: 1, Cap: 100}) || a.OutboxID != 1 || len(a.ChangedIDs) != 1 {
		t.Fatalf("submit a: %+v", a)
	}
	low := req("low")
	low.Priority = -5
	mustSubmit(t, s, low)
	b := mustSubmit(t, s, req("b", a.WorkItemID))
	if b.Dependencies != (workitem.Dependencies{Total: 1}) || b.CommandSequence != 3 {
		t.Fatalf("submit b: %+v", b)
	}
	again, err := s.Submit(bg, req("a"))
	if err != nil || !again.Replayed || again.WorkItemID != a.WorkItemID || again.CommandSequence != 1 {
		t.Fatalf("replay: %+v %v", again, err)
	}
	other := req("a")
	other.Priority = 9
	if _, err := s.Submit(bg, other); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("key reuse: %v", err)
	}
	// a (priority 0, seq 1) before low (priority -5); b waits for a.
	c1 := mustClaim(t, s, claimReq("w1"))
	if c1.WorkItem.WorkItemID != a.WorkItemID || c1.Attempt != 1 || c1.Fence != c1.WorkItem.Fence || c1.Fence == 0 {
		t.Fatalf("claim 1: %+v", c1)
	}
	c2 := mustClaim(t, s, claimReq("w2"))
	if c2.WorkItem.WorkItemID != "wi-2-0" {
		t.Fatalf("claim 2 took %s", c2.WorkItem.WorkItemID)
	}
	if _, err := s.Claim(bg, claimReq("w3")); !errors.Is(err, errs.NotFound) {
		t.Fatalf("nothing claimable: %v", err)
	}
	done := workitem.CompleteRequest{TenantRef: "t", WorkItemID: a.WorkItemID, Attempt: 1, Fence: c1.Fence + 1, Outcome: workitem.StatusSucceeded}
	if _, err := s.Complete(bg, done); !errors.Is(err, errs.StaleFence) {
		t.Fatalf("wrong fence: %v", err)
	}
	done.Fence = c1.Fence
	res, err := s.Complete(bg, done)
	if err != nil || res.WorkItem.Status != workitem.StatusSucceeded {
		t.Fatalf("complete: %+v %v", res, err)
	}
	if again, err := s.Complete(bg, done); err != nil || again.WorkItem.UpdatedAtMs != res.WorkItem.UpdatedAtMs {
		t.Fatalf("the same completion again: %+v %v", again, err)
	}
	if got := get(t, s, b.WorkItemID); got.Dependencies.Satisfied != 1 {
		t.Fatalf("b after a succeeded: %+v", got.Dependencies)
	}
	c3 := mustClaim(t, s, claimReq("w3"))
	if c3.WorkItem.WorkItemID != b.WorkItemID || c3.Fence <= c1.Fence {
		t.Fatalf("claim 3: %+v", c3)
	}
	if _, err := s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: b.WorkItemID, Reason: "operator"}); err != nil {
		t.Fatal(err)
	}
	done = workitem.CompleteRequest{TenantRef: "t", WorkItemID: b.WorkItemID, Attempt: 1, Fence: c3.Fence, Outcome: workitem.StatusSucceeded}
	if _, err := s.Complete(bg, done); !errors.Is(err, errs.StaleFence) {
		t.Fatalf("complete after cancel: %v", err)
	}
	list, err := s.List(bg, workitem.ListRequest{TenantRef: "t"}, fsm.Linearizable)
	if err != nil || len(list.WorkItems) != 3 || list.WorkItems[2].Status != workitem.StatusCancelled {
		t.Fatalf("list: %+v %v", list, err)
	}
	l.Advance(time.Minute)
	tick(t, l, 16)
	// low's claim expired: pending again for its second attempt.
	if got := get(t, s, "wi-2-0"); got.Status != workitem.StatusPending || got.Attempt != 1 || got.OwnerRef != "" {
		t.Fatalf("after expiry: %+v", got)
	}
	checkInvariants(t, l.FSM)
}

// Tenants and roles come from the verified principal: a member acts in
// its tenants only, a reader only reads, and only the claimer (or a
// controller, or the embedding host) completes a claim. Nothing a
// refused call sent changes the state.
func TestAccess(t *testing.T) {
	l, s := newService(t)
	a := mustSubmit(t, s, req("a"))
	refuse := func(what string, code errs.Code, call func() error) {
		t.Helper()
		before := contentHash(t, l.FSM)
		if err := call(); errs.CodeOf(err) != code {
			t.Errorf("%s: %v, want %s", what, err, code)
		}
		if contentHash(t, l.FSM) != before {
			t.Errorf("%s: the state changed", what)
		}
	}
	refuse("submit by a reader", errs.CodeForbidden, func() error { _, err := s.Submit(as(reader), req("r1")); return err })
	refuse("submit in another tenant", errs.CodeForbidden, func() error { _, err := s.Submit(as(outsider), req("o1")); return err })
	refuse("claim in another tenant", errs.CodeForbidden, func() error { _, err := s.Claim(as(outsider), claimReq("o")); return err })
	refuse("cancel by a reader", errs.CodeForbidden, func() error {
		_, err := s.Cancel(as(reader), workitem.CancelRequest{TenantRef: "t", WorkItemID: a.WorkItemID, Reason: "r"})
		return err
	})
	refuse("get in another tenant", errs.CodeNotFound, func() error {
		_, err := s.Get(as(outsider), workitem.GetRequest{TenantRef: "t", WorkItemID: a.WorkItemID}, fsm.Linearizable)
		return err
	})
	// The same id in another tenant is another item: not found.
	refuse("get of t's item as tenant u", errs.CodeNotFound, func() error {
		_, err := s.Get(as(outsider), workitem.GetRequest{TenantRef: "u", WorkItemID: a.WorkItemID}, fsm.Linearizable)
		return err
	})
	if _, err := s.Get(as(reader), workitem.GetRequest{TenantRef: "t", WorkItemID: a.WorkItemID}, fsm.Linearizable); err != nil {
		t.Fatalf("a reader reads: %v", err)
	}
	sub, err := s.Submit(as(member), req("m"))
	if err != nil || func() string { return get(t, s, sub.WorkItemID).SubmittedBy }() != "m1" {
		t.Fatalf("a member submits, recorded as the submitter: %v", err)
	}
	c, err := s.Claim(as(member), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: a.WorkItemID, TTLMs: 60_000})
	if err != nil || c.WorkItem.ClaimedBy != "m1" {
		t.Fatalf("claim by m1: %+v %v", c, err)
	}
	done := workitem.CompleteRequest{TenantRef: "t", WorkItemID: a.WorkItemID, Attempt: c.Attempt, Fence: c.Fence, Outcome: workitem.StatusFailed}
	refuse("complete by another member", errs.CodeForbidden, func() error { _, err := s.Complete(as(member2), done); return err })
	if res, err := s.Complete(as(ctl), done); err != nil || res.WorkItem.Status != workitem.StatusFailed {
		t.Fatalf("complete by a controller: %+v %v", res, err)
	}
	refuse("submit depending on a failed item", errs.CodeInvalid, func() error { _, err := s.Submit(bg, req("late", a.WorkItemID)); return err })
	checkInvariants(t, l.FSM)
}

// The outbox: each admission's outbox_id is the sequence of its
// change-feed event, whose payload names the item; each status change
// writes one more.
func TestOutbox(t *testing.T) {
	l, s := newService(t)
	a := mustSubmit(t, s, req("a"))
	b, err := s.SubmitBatch(bg, workitem.BatchRequest{TenantRef: "t", GraphRef: "g", IdempotencyKey: "batch", Requests: []workitem.SubmitRequest{req(""), req("")}})
	if err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, s, claimReq("w"))
	if _, err := s.Complete(bg, workitem.CompleteRequest{TenantRef: "t", WorkItemID: c.WorkItem.WorkItemID, Attempt: 1, Fence: c.Fence, Outcome: workitem.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	var page fsm.ChangesPage
	if err := fsm.Ask(bg, l, fsm.QueryChanges, false, fsm.ChangesRequest{}, &page); err != nil {
		t.Fatal(err)
	}
	type ev struct {
		kind string
		workitem.OutboxEvent
	}
	var got []ev
	for _, e := range page.Events {
		var p workitem.OutboxEvent
		if err := json.Unmarshal(e.Payload, &p); err != nil || e.Key != p.WorkItemID || e.Tenant != "t" {
			t.Fatalf("event %+v: %v", e, err)
		}
		got = append(got, ev{e.Kind, p})
	}
	want := []ev{
		{workitem.EventSubmitted, workitem.OutboxEvent{WorkItemID: a.WorkItemID, GraphRef: "default", CommandSequence: 1, Status: "pending", Kind: "build"}},
		{workitem.EventSubmitted, workitem.OutboxEvent{WorkItemID: b.Results[0].WorkItemID, GraphRef: "g", CommandSequence: 1, Status: "pending", Kind: "build"}},
		{workitem.EventSubmitted, workitem.OutboxEvent{WorkItemID: b.Results[1].WorkItemID, GraphRef: "g", CommandSequence: 2, Status: "pending", Kind: "build"}},
		{workitem.EventClaimed, workitem.OutboxEvent{WorkItemID: a.WorkItemID, GraphRef: "default", CommandSequence: 1, Status: "claimed", Kind: "build", Attempt: 1, Fence: c.Fence}},
		{workitem.EventSucceeded, workitem.OutboxEvent{WorkItemID: a.WorkItemID, GraphRef: "default", CommandSequence: 1, Status: "succeeded", Kind: "build", Attempt: 1, Fence: c.Fence}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(ev{})); diff != "" {
		t.Fatalf("outbox (-want +got):\n%s", diff)
	}
	if a.OutboxID != page.Events[0].Seq || b.Results[1].OutboxID != page.Events[2].Seq {
		t.Fatalf("outbox ids %d, %d; events %+v", a.OutboxID, b.Results[1].OutboxID, page.Events)
	}
}
