package authority_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
)

func policies(t *testing.T) *authority.PolicySet {
	t.Helper()
	ps, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{
		{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"},
		{Namespace: "RMDD", Min: 1000, Max: 1999, PolicyVersion: "10"},
		{Namespace: "GOC", Min: 1, Max: 100, PolicyVersion: "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func fixture(t *testing.T) *authority.FixtureConceptReservationAuthority {
	t.Helper()
	f, err := authority.NewFixture(policies(t))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func request(id, owner, req string) authority.ReserveRequest {
	return authority.ReserveRequest{ConceptID: id, TenantRef: "tenant-a", OwnerRef: owner, RequestRef: req,
		PurposeDigest: "sha256:purpose", RepositoryRef: "repo-1", TTLMs: 60_000}
}

func TestReserveReplayConflictReclaim(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	first, err := a.Reserve(ctx, request("RMDD-27", "alice", "r1"))
	if err != nil || !first.Created || first.Record.Fence == 0 || first.Record.State != authority.Reserved {
		t.Fatalf("first reserve: %+v %v", first, err)
	}
	if first.Record.PolicyVersion != "2" || first.Record.RangeMin != 1 || first.Record.RangeMax != 999 {
		t.Fatalf("policy binding: %+v", first.Record)
	}
	if first.Record.CreatedAtMs == 0 || first.Record.ExpiresAtMs != first.Record.CreatedAtMs+60_000 {
		t.Fatalf("times: created %d expires %d", first.Record.CreatedAtMs, first.Record.ExpiresAtMs)
	}
	again, err := a.Reserve(ctx, request("RMDD-27", "alice", "r1"))
	if err != nil || !again.Replayed || again.Record.ReservationID != first.Record.ReservationID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	_, err = a.Reserve(ctx, request("RMDD-27", "bob", "r2"))
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.CodeConflict || e.Detail["state"] != "reserved" || e.Detail["owner_ref"] != nil {
		t.Fatalf("conflict: %v (detail %v)", err, e)
	}
	// Release, then another request reclaims with a higher fence.
	rel, err := a.Transition(ctx, authority.TransitionRequest{ConceptID: "RMDD-27", TenantRef: "tenant-a", OwnerRef: "alice",
		ReservationID: first.Record.ReservationID, Fingerprint: first.Record.Fingerprint, ExpectedFence: first.Record.Fence, Action: authority.Release})
	if err != nil || rel.Record.State != authority.Released || !follows(rel.Record, first.Record) {
		t.Fatalf("release: %+v %v", rel, err)
	}
	re, err := a.Reserve(ctx, request("RMDD-27", "bob", "r2"))
	if err != nil || !re.Reclaimed || !follows(re.Record, rel.Record) || re.Record.OwnerRef != "bob" || re.Record.ReleasedAtMs != 0 {
		t.Fatalf("reclaim: %+v %v", re, err)
	}
	// Alice's old fence cannot touch bob's claim.
	_, err = a.Transition(ctx, authority.TransitionRequest{ConceptID: "RMDD-27", TenantRef: "tenant-a", OwnerRef: "alice",
		ReservationID: first.Record.ReservationID, Fingerprint: first.Record.Fingerprint, ExpectedFence: rel.Record.Fence, Action: authority.Materialize})
	if !errors.Is(err, errs.StaleFence) {
		t.Fatalf("stale holder: %v", err)
	}
}

func TestExpiryFollowsFSMTime(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	first, err := a.Reserve(ctx, request("GOC-19", "alice", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reserve(ctx, request("GOC-19", "bob", "r2")); !errors.Is(err, errs.Conflict) {
		t.Fatalf("reserve of a live claim: %v", err)
	}
	a.Advance(60 * time.Second)
	re, err := a.Reserve(ctx, request("GOC-19", "bob", "r2"))
	if err != nil || !re.Reclaimed || !follows(re.Record, first.Record) {
		t.Fatalf("reclaim after expiry: %+v %v", re, err)
	}
}

// wantCode fails the test unless err carries code (errors.Is on the
// sentinel of that code).
func wantCode(t *testing.T, what string, err error, code errs.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	if got := errs.CodeOf(err); got != code || !errors.Is(err, &errs.Error{Code: code}) {
		t.Fatalf("%s: %v (code %q), want %s", what, err, got, code)
	}
}

// holder is the transition request of the claim rec for action, with
// the fence the caller presents.
func holder(rec *authority.Record, action authority.Action, fence uint64) authority.TransitionRequest {
	return authority.TransitionRequest{
		ConceptID: rec.ConceptID, TenantRef: rec.TenantRef, OwnerRef: rec.OwnerRef,
		ReservationID: rec.ReservationID, Fingerprint: rec.Fingerprint,
		ExpectedFence: fence, Action: action,
	}
}

// follows reports whether next is the write right after prev: a higher
// fence that replaced prev's. Fences are log indexes, not counts.
func follows(next, prev *authority.Record) bool {
	return next.Fence > prev.Fence && next.PrevFence == prev.Fence
}

// mustReserve reserves and requires a claim this call made.
func mustReserve(t *testing.T, a authority.Authority, req authority.ReserveRequest) *authority.Record {
	t.Helper()
	res, err := a.Reserve(context.Background(), req)
	if err != nil {
		t.Fatalf("reserve %s by %s/%s: %v", req.ConceptID, req.OwnerRef, req.RequestRef, err)
	}
	if !res.Created && !res.Reclaimed {
		t.Fatalf("reserve %s by %s/%s: %+v, want created or reclaimed", req.ConceptID, req.OwnerRef, req.RequestRef, res)
	}
	return res.Record
}

// mustStep applies action with the record's own fence and requires a
// fresh (not replayed) transition.
func mustStep(t *testing.T, a authority.Authority, rec *authority.Record, action authority.Action) *authority.Record {
	t.Helper()
	res, err := a.Transition(context.Background(), holder(rec, action, rec.Fence))
	if err != nil {
		t.Fatalf("%s %s at fence %d: %v", action, rec.ConceptID, rec.Fence, err)
	}
	if res.Replayed {
		t.Fatalf("%s %s at fence %d: replayed, want a fresh transition", action, rec.ConceptID, rec.Fence)
	}
	return res.Record
}
