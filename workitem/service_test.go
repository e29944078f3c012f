package workitem_test

import (
	"errors"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem"
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
