package authority_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
)

// Issue 40 item 1: a policy may declare a semantic prefix, and ids under
// it (RMDD-SEARCH-<n>) validate against that policy, in a file as in Go.
func TestPolicyFileDeclaresASemanticPrefix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policies.json")
	body := `[
		{"namespace": "RMDD", "min": 1, "max": 9999, "policy_version": "2"},
		{"namespace": "RMDD", "prefix": "SEARCH", "min": 1, "max": 99, "policy_version": "s1"}
	]`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := authority.LoadPolicyFile(path)
	if err != nil {
		t.Fatalf("a file with a prefix: %v", err)
	}
	for id, version := range map[string]string{"RMDD-1": "2", "RMDD-SEARCH-1": "s1", "RMDD-SEARCH-99": "s1", "RMDD-50": "2"} {
		cid, err := authority.ParseConceptID(id)
		if err != nil {
			t.Fatalf("parse %s: %v", id, err)
		}
		p, err := ps.Select(cid)
		if err != nil || p.PolicyVersion != version {
			t.Errorf("Select(%s) = %+v %v, want version %s", id, p, err, version)
		}
	}
	for _, id := range []string{"RMDD-SEARCH-100", "RMDD-OTHER-1", "GOC-SEARCH-1"} {
		cid, err := authority.ParseConceptID(id)
		if err != nil {
			t.Fatalf("parse %s: %v", id, err)
		}
		_, err = ps.Select(cid)
		wantCode(t, "Select "+id, err, errs.CodeInvalid)
	}
}

func TestParseConceptIDWithAPrefix(t *testing.T) {
	for in, want := range map[string]authority.ConceptID{
		"RMDD-SEARCH-1":    {Namespace: "RMDD", Prefix: "SEARCH", Number: 1},
		"RMDD-SEARCH-V2-7": {Namespace: "RMDD", Prefix: "SEARCH-V2", Number: 7},
		"A-B-10":           {Namespace: "A", Prefix: "B", Number: 10},
	} {
		id, err := authority.ParseConceptID(in)
		if err != nil || id != want || id.String() != in {
			t.Errorf("ParseConceptID(%q) = %+v %v, want %+v printing back as itself", in, id, err, want)
		}
	}
	for _, in := range []string{"RMDD--1", "RMDD-search-1", "RMDD-2-7", "RMDD-SEARCH--1", "RMDD-SEARCH-", "RMDD-S_X-1", "RMDD-" + longPrefix() + "-1"} {
		if id, err := authority.ParseConceptID(in); err == nil {
			t.Errorf("ParseConceptID(%q) = %+v, want an error", in, id)
		}
	}
}

func longPrefix() string {
	b := make([]byte, authority.MaxPrefixLen+1)
	for i := range b {
		b[i] = 'P'
	}
	return string(b)
}

// Overlap checks cover prefixes: one namespace and prefix may not have
// overlapping ranges; another prefix (or none) is a disjoint id space.
func TestPolicySetOverlapCoversPrefixes(t *testing.T) {
	if _, err := authority.NewPolicySet([]pol{
		{Namespace: "RMDD", Prefix: "SEARCH", Min: 1, Max: 100, PolicyVersion: "a"},
		{Namespace: "RMDD", Prefix: "SEARCH", Min: 50, Max: 200, PolicyVersion: "b"},
	}); err == nil {
		t.Fatal("accepted overlapping ranges under one prefix")
	}
	ps, err := authority.NewPolicySet([]pol{
		{Namespace: "RMDD", Min: 1, Max: 100, PolicyVersion: "plain"},
		{Namespace: "RMDD", Prefix: "SEARCH", Min: 1, Max: 100, PolicyVersion: "search"},
		{Namespace: "RMDD", Prefix: "SEARCH-V2", Min: 1, Max: 100, PolicyVersion: "search-v2"},
	})
	if err != nil {
		t.Fatalf("disjoint prefixes refused: %v", err)
	}
	if n := len(ps.Policies()); n != 3 {
		t.Fatalf("%d policies, want 3", n)
	}
	for _, bad := range []pol{
		{Namespace: "RMDD", Prefix: "search", Min: 1, Max: 1, PolicyVersion: "x"},
		{Namespace: "RMDD", Prefix: "-SEARCH", Min: 1, Max: 1, PolicyVersion: "x"},
		{Namespace: "RMDD", Prefix: "SEARCH-", Min: 1, Max: 1, PolicyVersion: "x"},
		{Namespace: "RMDD", Prefix: "9X", Min: 1, Max: 1, PolicyVersion: "x"},
		{Namespace: "RMDD", Prefix: longPrefix(), Min: 1, Max: 1, PolicyVersion: "x"},
	} {
		if _, err := authority.NewPolicySet([]pol{bad}); err == nil {
			t.Errorf("accepted prefix %q", bad.Prefix)
		}
	}
}

// A reservation under a prefix is bound to the prefix's policy, and
// reserve-next probes inside a prefix.
func TestReserveUnderASemanticPrefix(t *testing.T) {
	ctx := context.Background()
	ps, err := authority.NewPolicySet([]pol{
		{Namespace: "RMDD", Min: 1, Max: 9999, PolicyVersion: "2"},
		{Namespace: "RMDD", Prefix: "SEARCH", Min: 1, Max: 99, PolicyVersion: "s1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := authority.NewFixture(ps)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Reserve(ctx, request("RMDD-SEARCH-1", "alice", "r1"))
	if err != nil {
		t.Fatalf("reserve RMDD-SEARCH-1: %v", err)
	}
	rec := res.Record
	if rec.ConceptID != "RMDD-SEARCH-1" || rec.Namespace != "RMDD" || rec.Prefix != "SEARCH" || rec.Number != 1 ||
		rec.PolicyVersion != "s1" || rec.RangeMin != 1 || rec.RangeMax != 99 {
		t.Fatalf("record %+v, want RMDD-SEARCH-1 bound to policy s1 (1..99)", rec)
	}
	// RMDD-1 is another id: no conflict with RMDD-SEARCH-1.
	if res, err := a.Reserve(ctx, request("RMDD-1", "bob", "r2")); err != nil || !res.Created || res.Record.Prefix != "" || res.Record.PolicyVersion != "2" {
		t.Fatalf("reserve RMDD-1: %+v %v", res, err)
	}
	_, err = a.Reserve(ctx, request("RMDD-SEARCH-100", "alice", "r3"))
	wantCode(t, "reserve beyond the prefix's range", err, errs.CodeInvalid)
	next, err := a.ReserveNextNumeric(ctx, authority.ReserveNextRequest{Namespace: "RMDD", Prefix: "SEARCH", From: 1, To: 5,
		Request: authority.ReserveRequest{TenantRef: "tenant-a", OwnerRef: "carol", RequestRef: "r4", PurposeDigest: "p"}})
	if err != nil || next.Record.ConceptID != "RMDD-SEARCH-2" {
		t.Fatalf("reserve-next under the prefix: %+v %v, want RMDD-SEARCH-2", next, err)
	}
	_, err = a.ReserveNextNumeric(ctx, authority.ReserveNextRequest{Namespace: "RMDD", Prefix: "bad", From: 1, To: 5,
		Request: authority.ReserveRequest{TenantRef: "tenant-a", OwnerRef: "carol", RequestRef: "r5", PurposeDigest: "p"}})
	wantCode(t, "reserve-next under a bad prefix", err, errs.CodeInvalid)
}
