package authority_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
)

// Issue 40 item 3: the same request_ref with another ttl_ms replayed
// (200) instead of conflicting. Every input of the request is in its
// fingerprint; a retry with the same inputs (ttl_ms 0 is the default
// spelled out) still replays.
func TestChangedTTLConflicts(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	req := request("RMDD-27", "alice", "r1") // ttl 60 s
	first, err := a.Reserve(ctx, req)
	if err != nil || !first.Created {
		t.Fatalf("reserve: %+v %v", first, err)
	}
	if !strings.HasPrefix(first.Record.Fingerprint, "v2:") {
		t.Errorf("fingerprint %q, want version 2", first.Record.Fingerprint)
	}
	changed := req
	changed.TTLMs = 120_000
	_, err = a.Reserve(ctx, changed)
	wantCode(t, "the same request with another ttl_ms", err, errs.CodeConflict)
	if again, err := a.Reserve(ctx, req); err != nil || !again.Replayed || again.Record.ReservationID != first.Record.ReservationID {
		t.Fatalf("the same request again: %+v %v", again, err)
	}
	// The default TTL given or left out is the same input.
	dflt := request("RMDD-28", "alice", "r2")
	dflt.TTLMs = 0
	if _, err := a.Reserve(ctx, dflt); err != nil {
		t.Fatal(err)
	}
	dflt.TTLMs = authority.DefaultTTL.Milliseconds()
	if again, err := a.Reserve(ctx, dflt); err != nil || !again.Replayed {
		t.Fatalf("the default TTL spelled out: %+v %v", again, err)
	}
	// Every other input conflicts too.
	for name, change := range map[string]func(*authority.ReserveRequest){
		"repository": func(r *authority.ReserveRequest) { r.RepositoryRef = "repo-2" },
		"lane":       func(r *authority.ReserveRequest) { r.LaneRef = "lane-2" },
		"design":     func(r *authority.ReserveRequest) { r.DesignRef = "design-2" },
		"purpose":    func(r *authority.ReserveRequest) { r.PurposeDigest = "sha256:other" },
		"provenance": func(r *authority.ReserveRequest) { r.ProvenanceRefs = []string{"p"} },
	} {
		r := req
		change(&r)
		_, err := a.Reserve(ctx, r)
		wantCode(t, "the same request with another "+name, err, errs.CodeConflict)
	}
}

// A claim written with the version 1 fingerprint (before ttl_ms was in
// it) still replays for the same request, and its holder moves it with
// the fingerprint it was given.
func TestOldFingerprintStillReplays(t *testing.T) {
	ctx := context.Background()
	old, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	req := request("RMDD-3", "alice", "r3")
	made, err := authority.NewService(old, old, policies(t)).Reserve(ctx, req)
	if err != nil || !strings.HasPrefix(made.Record.Fingerprint, "v1:") {
		t.Fatalf("reserve on the node primitives alone: %+v %v", made, err)
	}
	local, err := fsmtest.New(nodes.Module(), authority.Module())
	if err != nil {
		t.Fatal(err)
	}
	if err := local.FSM.Restore(io.NopCloser(bytes.NewReader(fsmtest.Snapshot(t, old.FSM)))); err != nil {
		t.Fatal(err)
	}
	svc := authority.NewService(local, local, policies(t))
	again, err := svc.Reserve(ctx, req)
	if err != nil || !again.Replayed || again.Record.Fingerprint != made.Record.Fingerprint {
		t.Fatalf("replay of a version 1 claim: %+v %v", again, err)
	}
	other := req
	other.PurposeDigest = "sha256:other"
	_, err = svc.Reserve(ctx, other)
	wantCode(t, "another purpose for a version 1 claim", err, errs.CodeConflict)
	if _, err := svc.Transition(ctx, authority.TransitionRequest{ConceptID: "RMDD-3", TenantRef: "tenant-a", OwnerRef: "alice",
		ReservationID: made.Record.ReservationID, Fingerprint: made.Record.Fingerprint, ExpectedFence: made.Record.Fence, Action: authority.Materialize}); err != nil {
		t.Fatalf("materialize a version 1 claim: %v", err)
	}
}
