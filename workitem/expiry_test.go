package workitem_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/workitem"
)

// fanOut submits n items that depend on dep, in batches.
func fanOut(t *testing.T, s *workitem.Service, dep string, n int) []string {
	t.Helper()
	var ids []string
	for b := 0; len(ids) < n; b++ {
		batch := workitem.BatchRequest{TenantRef: "t", IdempotencyKey: fmt.Sprintf("fan-%s-%d", dep, b)}
		for i := 0; i < workitem.MaxBatch && len(ids)+len(batch.Requests) < n; i++ {
			c := req("")
			c.IdempotencyKey, c.DependsOn, c.MaxTenantInFlight = "", []string{dep}, workitem.MaxTenantInFlight
			batch.Requests = append(batch.Requests, c)
		}
		res, err := s.SubmitBatch(bg, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Results {
			ids = append(ids, r.WorkItemID)
		}
	}
	return ids
}

func countStatus(t *testing.T, s *workitem.Service, status string) (n int, satisfied int64) {
	t.Helper()
	after := ""
	for {
		page, err := s.List(bg, workitem.ListRequest{TenantRef: "t", Status: status, After: after}, fsm.Linearizable)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range page.WorkItems {
			n++
			satisfied += w.Dependencies.Satisfied
		}
		if after = page.NextCursor; after == "" {
			return n, satisfied
		}
	}
}

// A success reaches InlineCascade dependents in the completing command
// and the rest through Tick, budget rows at a time; a failure cancels
// every dependent the same way, and their dependents after them.
func TestCascadeIsBounded(t *testing.T) {
	l, s := newService(t)
	a := mustSubmit(t, s, req("a"))
	deps := fanOut(t, s, a.WorkItemID, 300)
	c := mustClaim(t, s, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: a.WorkItemID, TTLMs: 60_000})
	if _, err := s.Complete(bg, workitem.CompleteRequest{TenantRef: "t", WorkItemID: a.WorkItemID, Attempt: 1, Fence: c.Fence, Outcome: workitem.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if _, got := countStatus(t, s, workitem.StatusPending); got != workitem.InlineCascade {
		t.Fatalf("the completion itself satisfied %d dependents, want %d", got, workitem.InlineCascade)
	}
	checkInvariants(t, l.FSM)
	tick(t, l, 50)
	if _, got := countStatus(t, s, workitem.StatusPending); got != workitem.InlineCascade+50 {
		t.Fatalf("one tick of budget 50: %d satisfied", got)
	}
	for i := 0; i < 4; i++ {
		tick(t, l, 50)
	}
	if n, got := countStatus(t, s, workitem.StatusPending); n != 300 || got != 300 {
		t.Fatalf("after the ticks: %d pending, %d satisfied", n, got)
	}
	checkInvariants(t, l.FSM)

	// b fails its only attempt by expiry: its 200 dependents are
	// cancelled, and the one that waits for the first of them after it.
	b := req("b")
	b.MaxAttempts, b.MaxTenantInFlight = 1, workitem.MaxTenantInFlight
	bid := mustSubmit(t, s, b).WorkItemID
	bdeps := fanOut(t, s, bid, 200)
	grandchild := req("grandchild", bdeps[0])
	grandchild.MaxTenantInFlight = workitem.MaxTenantInFlight
	mustSubmit(t, s, grandchild)
	if _, err := s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: deps[0], Reason: "tidy"}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: bid, TTLMs: 1000})
	l.Advance(2 * time.Second)
	tick(t, l, 64) // expires b's claim: its cascade starts
	for i := 0; len(checkStored(t, l.FSM).Cascade) > 0; i++ {
		if i == 20 {
			t.Fatal("the cascade does not end")
		}
		tick(t, l, 64)
	}
	if got := get(t, s, bid); got.Status != workitem.StatusFailed || got.Reason != workitem.ReasonAttemptsExhausted {
		t.Fatalf("b: %+v", got)
	}
	if n, _ := countStatus(t, s, workitem.StatusCancelled); n != 202 {
		t.Fatalf("%d cancelled, want b's 200 dependents, the grandchild and the one cancelled by hand", n)
	}
	if got := get(t, s, bdeps[0]); got.Reason != workitem.ReasonDependencyFailed {
		t.Fatalf("a dependent of b: %+v", got)
	}
	if st := checkStored(t, l.FSM); len(st.Edges) != 0 {
		t.Fatalf("after the cascade: %d edges", len(st.Edges))
	}
}

// Deadlines: an item past its deadline is never claimed, Tick fails it
// and cancels what waits for it; a claimed one keeps its claim and fails
// when the claim expires; a deadline in the past is refused at submit.
func TestDeadlines(t *testing.T) {
	l, s := newService(t)
	soon := req("soon")
	d := fsmtest.Epoch/1000 + 5
	soon.DeadlineUnix = &d
	soonID := mustSubmit(t, s, soon).WorkItemID
	waiter := mustSubmit(t, s, req("waiter", soonID)).WorkItemID
	claimed := req("claimed")
	claimed.DeadlineUnix, claimed.Priority, claimed.MaxAttempts = &d, 10, 3
	claimedID := mustSubmit(t, s, claimed).WorkItemID
	mustClaim(t, s, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: claimedID, TTLMs: 30_000})
	l.Advance(6 * time.Second)
	if _, err := s.Claim(bg, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: soonID, TTLMs: 1000}); !errors.Is(err, errs.NotFound) {
		t.Fatalf("claim past the deadline: %v", err)
	}
	tick(t, l, 8)
	if got := get(t, s, soonID); got.Status != workitem.StatusFailed || got.Reason != workitem.ReasonDeadlineExceeded {
		t.Fatalf("past its deadline: %+v", got)
	}
	if got := get(t, s, waiter); got.Status != workitem.StatusCancelled || got.Reason != workitem.ReasonDependencyFailed {
		t.Fatalf("its dependent: %+v", got)
	}
	if got := get(t, s, claimedID); got.Status != workitem.StatusClaimed {
		t.Fatalf("a claimed item past its deadline: %+v", got)
	}
	l.Advance(30 * time.Second)
	tick(t, l, 8)
	if got := get(t, s, claimedID); got.Status != workitem.StatusFailed || got.Reason != workitem.ReasonDeadlineExceeded || got.Attempt != 1 {
		t.Fatalf("its claim expired past the deadline: %+v", got)
	}
	past := req("past")
	past.DeadlineUnix = &d
	if _, err := s.Submit(bg, past); !errors.Is(err, errs.Invalid) {
		t.Fatalf("a deadline that has passed: %v", err)
	}
	checkInvariants(t, l.FSM)
}

// Claims expire by FSM time only: an expired claim cannot complete
// (expired), Tick returns the item for another attempt with a larger
// fence, and the last attempt's expiry fails it. A claim's fence is the
// log index of the claim: strictly larger than every earlier fence.
func TestClaimExpiryAndAttempts(t *testing.T) {
	l, s := newService(t)
	r := req("x")
	r.MaxAttempts = 2
	id := mustSubmit(t, s, r).WorkItemID
	first := mustClaim(t, s, claimReq("w1"))
	l.Advance(10 * time.Second)
	done := workitem.CompleteRequest{TenantRef: "t", WorkItemID: id, Attempt: 1, Fence: first.Fence, Outcome: workitem.StatusSucceeded}
	if _, err := s.Complete(bg, done); !errors.Is(err, errs.Expired) {
		t.Fatalf("complete of an expired claim: %v", err)
	}
	if _, err := s.Claim(bg, claimReq("w2")); !errors.Is(err, errs.NotFound) {
		t.Fatalf("claim before the tick returned the item: %v", err)
	}
	tick(t, l, 8)
	second := mustClaim(t, s, claimReq("w2"))
	if second.Attempt != 2 || second.Fence <= first.Fence || second.WorkItem.OwnerRef != "w2" {
		t.Fatalf("second claim: %+v", second)
	}
	if _, err := s.Complete(bg, done); !errors.Is(err, errs.StaleFence) {
		t.Fatalf("the first claim's fence after a second claim: %v", err)
	}
	l.Advance(10 * time.Second)
	tick(t, l, 8)
	if got := get(t, s, id); got.Status != workitem.StatusFailed || got.Reason != workitem.ReasonAttemptsExhausted {
		t.Fatalf("after the last attempt expired: %+v", got)
	}
	checkInvariants(t, l.FSM)
}

// Ended items stay readable for TerminalRetention, then Tick forgets
// them; a dependency on a forgotten item is then missing.
func TestRetention(t *testing.T) {
	l, s := newService(t)
	id := mustSubmit(t, s, req("a")).WorkItemID
	if _, err := s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: id, Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	l.Advance(workitem.TerminalRetention - time.Second)
	tick(t, l, 8)
	get(t, s, id)
	l.Advance(time.Second)
	tick(t, l, 8)
	if _, err := s.Get(bg, workitem.GetRequest{TenantRef: "t", WorkItemID: id}, fsm.Linearizable); !errors.Is(err, errs.NotFound) {
		t.Fatalf("get after retention: %v", err)
	}
	_, err := s.Submit(bg, req("b", id))
	if e := errs.From(err); e == nil || e.Code != errs.CodeInvalid || e.Detail["reason"] != "dependency_missing" {
		t.Fatalf("depending on a forgotten item: %v", err)
	}
	checkInvariants(t, l.FSM)
}
