package workitem_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
)

// listed is how many items graph holds in tenant t.
func listed(t *testing.T, s *workitem.Service, graph string) int {
	t.Helper()
	res, err := s.List(as(reader), workitem.ListRequest{TenantRef: "t", GraphRef: graph}, fsm.Linearizable)
	noErr(t, "list", err)
	return len(res.WorkItems)
}

// Issue 40 item 6: an admission's key is the tenant's, whoever sends it.
// A second member of the tenant repeating key and request gets the
// first result, replayed, and no sequence or item is allocated; another
// request under the key is idempotency_conflict; a principal of another
// tenant is refused before the ledger is read (else the very same
// request would replay the tenant's result to it).
func TestAdmissionKeyIsTheTenants(t *testing.T) {
	l, s := newEnabled(t)
	first, err := s.Submit(as(member), req("shared"))
	noErr(t, "first", err)
	again, err := s.Submit(as(member2), req("shared"))
	noErr(t, "second member", err)
	if !again.Replayed || again.WorkItemID != first.WorkItemID || again.CommandSequence != first.CommandSequence {
		t.Fatalf("second member: %+v, want the first result %+v replayed", again, first)
	}
	other := req("shared")
	other.Priority = 7
	refusedFSM(t, l, "another request under the key", errs.CodeIdempotencyConflict, "", func() error {
		_, err := s.Submit(as(member2), other)
		return err
	})
	refusedFSM(t, l, "a principal of another tenant", errs.CodeForbidden, "", func() error {
		_, err := s.Submit(as(outsider), req("shared"))
		return err
	})
	if n := listed(t, s, "default"); n != 1 {
		t.Fatalf("%d items, want 1", n)
	}
	next := mustSubmit(t, s, req("next"))
	if next.CommandSequence != first.CommandSequence+1 {
		t.Fatalf("the next admission has sequence %d, want %d: a replay allocated one", next.CommandSequence, first.CommandSequence+1)
	}

	// A batch alike, and a single submit cannot reuse the batch's key.
	b := workitem.BatchRequest{TenantRef: "t", GraphRef: "g", IdempotencyKey: "batch", Requests: []workitem.SubmitRequest{req(""), req("")}}
	b.Requests[0].IdempotencyKey, b.Requests[1].IdempotencyKey = "", ""
	fb, err := s.SubmitBatch(as(member), b)
	noErr(t, "batch", err)
	ab, err := s.SubmitBatch(as(member2), b)
	noErr(t, "batch again", err)
	if !ab.Replayed || ab.BatchSequenceRange != fb.BatchSequenceRange || ab.Results[1].WorkItemID != fb.Results[1].WorkItemID {
		t.Fatalf("batch by a second member: %+v, want %+v replayed", ab, fb)
	}
	refusedFSM(t, l, "a batch of another tenant's principal", errs.CodeForbidden, "", func() error {
		_, err := s.SubmitBatch(as(outsider), b)
		return err
	})
	single := req("batch")
	single.GraphRef = "g"
	refusedFSM(t, l, "a submit under the batch's key", errs.CodeIdempotencyConflict, "", func() error {
		_, err := s.Submit(as(member2), single)
		return err
	})
	if n := listed(t, s, "g"); n != 2 {
		t.Fatalf("%d items in g, want 2", n)
	}
}

// A keyed claim is the tenant's too: a second member retrying it gets
// the same claim, not a second item.
func TestClaimKeyIsTheTenants(t *testing.T) {
	l, s := newEnabled(t)
	mustSubmit(t, s, req("a"))
	mustSubmit(t, s, req("b"))
	c := claimReq("w")
	c.IdempotencyKey = "ck"
	first, err := s.Claim(as(member), c)
	noErr(t, "claim", err)
	again, err := s.Claim(as(member2), c)
	noErr(t, "claim again", err)
	if !again.Replayed || again.WorkItem.WorkItemID != first.WorkItem.WorkItemID || again.Fence != first.Fence {
		t.Fatalf("claim by a second member: %+v, want %+v replayed", again, first)
	}
	refusedFSM(t, l, "a claim of another tenant's principal", errs.CodeForbidden, "", func() error {
		_, err := s.Claim(as(outsider), c)
		return err
	})
}

// The ledger answers only a principal who may send the command: a
// reader of the tenant who repeats a member's key (and request, or
// another) hears forbidden, not the member's claim with its fence, nor
// that the key was used; the member's own retry still replays. Before,
// the ledger answered before any handler looked at the role.
func TestLedgerAnswersOnlyWhoMaySend(t *testing.T) {
	l, s := newEnabled(t)
	mustSubmit(t, s, req("a"))
	first, err := s.Submit(as(member), req("shared"))
	noErr(t, "submit", err)
	c := claimReq("w")
	c.IdempotencyKey = "ck"
	claim, err := s.Claim(as(member), c)
	noErr(t, "claim", err)
	other := req("shared")
	other.Priority = 7
	for what, call := range map[string]func() error{
		"the member's claim":              func() error { _, err := s.Claim(as(reader), c); return err },
		"the member's admission":          func() error { _, err := s.Submit(as(reader), req("shared")); return err },
		"another admission under the key": func() error { _, err := s.Submit(as(reader), other); return err },
	} {
		e := refusedFSM(t, l, "a reader repeating "+what, errs.CodeForbidden, "", call)
		if e.Detail["result"] != nil || strings.Contains(e.Message, claim.WorkItem.WorkItemID) {
			t.Fatalf("the refusal of %s tells the reader the result: %+v", what, e)
		}
	}
	again, err := s.Claim(as(member), c)
	if err != nil || !again.Replayed || again.Fence != claim.Fence {
		t.Fatalf("the member's retry: %+v %v, want its claim replayed", again, err)
	}
	if again, err := s.Submit(as(member2), req("shared")); err != nil || !again.Replayed || again.WorkItemID != first.WorkItemID {
		t.Fatalf("a second member's retry: %+v %v, want the admission replayed", again, err)
	}
}

// Before the cluster enables the tenant-keyed versions (a member still
// runs a binary without them), keys stay per principal, as the log was
// applied: a second member runs its own admission. Once they are
// enabled, a service that learnt the old scope is refused once, sends
// the new one and goes on.
func TestAdmissionKeyFollowsTheEnabledVersion(t *testing.T) {
	l, s := newService(t)
	old := fsm.ServedBy(workitem.Module())
	if err := l.Enable(fsmtest.AtVersion(old, workitem.Name, 2)); err != nil {
		t.Fatal(err)
	}
	first := mustSubmit(t, s, req("k"))
	second, err := s.Submit(as(member2), req("k"))
	noErr(t, "second member at version 2", err)
	if second.Replayed || second.WorkItemID == first.WorkItemID {
		t.Fatalf("version 2 replayed another principal's key: %+v", second)
	}
	if err := l.Enable(old); err != nil {
		t.Fatal(err)
	}
	// A retry of k across the switch (its first attempt applied at
	// version 2) gets its first result, not a second item.
	retry, err := workitem.NewService(l, l).Submit(bg, req("k")) // as first was
	noErr(t, "k again after the switch", err)
	if !retry.Replayed || retry.WorkItemID != first.WorkItemID {
		t.Fatalf("k again after the switch: %+v, want %+v replayed", retry, first)
	}
	// s learnt version 2's scope: its next submit is refused by the FSM
	// (the scope names no tenant), and it sends the new scope.
	third := mustSubmit(t, s, req("k3"))
	if third.Replayed {
		t.Fatalf("third: %+v", third)
	}
	again, err := workitem.NewService(l, l).Submit(as(member2), req("k3"))
	noErr(t, "k3 by a second member", err)
	if !again.Replayed || again.WorkItemID != third.WorkItemID {
		t.Fatalf("k3 by a second member through another service: %+v, want %+v replayed", again, third)
	}
	// The old scope names no tenant: the FSM refuses it before the
	// ledger, whoever sends it.
	res, err := l.Propose(as(member), log.Command{Type: workitem.CmdSubmit, Version: 1, IdemScope: scopeOf(nil, "t", "default"),
		IdemKey: "k3", Payload: log.MustMarshal(validRaw())})
	if err != nil || res.Err == nil || res.Err.Code != errs.CodeInvalid || res.Err.Detail["reason"] != fsm.ReasonIdempotencyScope {
		t.Fatalf("the old scope at version 3: %v %v, want invalid %s", err, res.Err, fsm.ReasonIdempotencyScope)
	}
}
