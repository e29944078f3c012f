package client_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

func TestConcepts(t *testing.T) {
	ctx, cs := ctxOf(t), newClient(t, "ops").Concepts()
	// A namespace of this test's own, added to the cluster's set.
	ns := "GO" + strings.Map(func(r rune) rune { return 'A' + (r-'0')%26 }, fmt.Sprint(time.Now().UnixNano()%1e8))
	cur, err := cs.Policies(ctx, client.Linearizable)
	must(t, err)
	pols := append(cur.Policies, client.ConceptNamespacePolicy{Namespace: ns, Min: 1, Max: 99, PolicyVersion: "1"})
	set, err := cs.SetPolicies(ctx, client.PoliciesRequest{Policies: pols})
	must(t, err)
	if !set.Configured || !set.Changed || set.Version != cur.Version+1 {
		t.Fatalf("set policies: %+v after %+v", set, cur)
	}

	tenant := unique(t)
	reserve := func(id, request string) (*client.ReserveResult, error) {
		return cs.Reserve(ctx, client.ReserveRequest{ConceptID: id, TenantRef: tenant, OwnerRef: "",
			RequestRef: request, PurposeDigest: digest("purpose")})
	}
	first, err := reserve(ns+"-1", "req-1")
	must(t, err)
	if !first.Created || first.Record.State != "reserved" || first.Record.Fence == 0 {
		t.Fatalf("reserve: %+v %+v", first, first.Record)
	}
	again, err := reserve(ns+"-1", "req-1")
	must(t, err)
	if !again.Replayed || again.Record.Fence != first.Record.Fence {
		t.Fatalf("replay: %+v", again)
	}
	_, err = reserve(ns+"-1", "req-2")
	wantCode(t, err, errs.CodeConflict)
	_, err = reserve("NOPOLICY-1", "req-3")
	wantCode(t, err, errs.CodeInvalid)

	rec := first.Record
	tr := client.TransitionRequest{ConceptID: rec.ConceptID, TenantRef: tenant, OwnerRef: "",
		ReservationID: rec.ReservationID, Fingerprint: rec.Fingerprint, ExpectedFence: rec.Fence, Action: "materialize"}
	moved, err := cs.Transition(ctx, tr)
	must(t, err)
	if moved.Record.State != "materialized" || moved.Record.Fence <= rec.Fence {
		t.Fatalf("transition: %+v", moved.Record)
	}
	tr.Action = "land"
	_, err = cs.Transition(ctx, tr) // the fence before the move
	wantCode(t, err, errs.CodeStaleFence)

	got, err := cs.Get(ctx, rec.ConceptID, tenant)
	must(t, err)
	if got.State != "materialized" || got.Fence != moved.Record.Fence {
		t.Fatalf("get: %+v", got)
	}
	_, err = cs.Get(ctx, rec.ConceptID, unique(t))
	wantCode(t, err, errs.CodeNotFound)

	next, err := cs.ReserveNext(ctx, client.ReserveNextRequest{Namespace: ns, From: 1, To: 2,
		Request: client.ReserveRequest{TenantRef: tenant, OwnerRef: "", RequestRef: "req-n1", PurposeDigest: digest("p")}})
	must(t, err)
	if next.Record.ConceptID != ns+"-2" {
		t.Fatalf("reserve next: %s", next.Record.ConceptID)
	}
	_, err = cs.ReserveNext(ctx, client.ReserveNextRequest{Namespace: ns, From: 1, To: 2,
		Request: client.ReserveRequest{TenantRef: tenant, OwnerRef: "", RequestRef: "req-n2", PurposeDigest: digest("p")}})
	wantCode(t, err, errs.CodeExhausted)

	page, err := cs.List(ctx, tenant, client.PageQuery{Limit: 128})
	must(t, err)
	var ids []string
	for _, r := range page.Records {
		ids = append(ids, r.ConceptID)
	}
	if fmt.Sprint(ids) != fmt.Sprint([]string{ns + "-1", ns + "-2"}) {
		t.Fatalf("list: %v", ids)
	}
}
