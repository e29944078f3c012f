package authority_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
)

type pol = authority.ConceptNamespacePolicy

func TestNewPolicySetRejectsOverlapWhateverTheVersions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []pol
	}{
		{"2 and 10 overlapping", []pol{{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"}, {Namespace: "RMDD", Min: 500, Max: 1999, PolicyVersion: "10"}}},
		{"10 and 2 overlapping, declared the other way", []pol{{Namespace: "RMDD", Min: 500, Max: 1999, PolicyVersion: "10"}, {Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"}}},
		{"same version twice", []pol{{Namespace: "RMDD", Min: 1, Max: 10, PolicyVersion: "1"}, {Namespace: "RMDD", Min: 10, Max: 20, PolicyVersion: "1"}}},
		{"identical policies", []pol{{Namespace: "RMDD", Min: 1, Max: 10, PolicyVersion: "1"}, {Namespace: "RMDD", Min: 1, Max: 10, PolicyVersion: "1"}}},
		{"one range inside another", []pol{{Namespace: "RMDD", Min: 1, Max: 100, PolicyVersion: "1"}, {Namespace: "RMDD", Min: 40, Max: 60, PolicyVersion: "2"}}},
		{"touching at one number", []pol{{Namespace: "RMDD", Min: 1, Max: 100, PolicyVersion: "1"}, {Namespace: "RMDD", Min: 100, Max: 200, PolicyVersion: "2"}}},
		{"overlap hidden behind a disjoint one", []pol{{Namespace: "GOC", Min: 1, Max: 5, PolicyVersion: "1"}, {Namespace: "RMDD", Min: 1, Max: 1000, PolicyVersion: "a"}, {Namespace: "RMDD", Min: 2000, Max: 3000, PolicyVersion: "b"}, {Namespace: "RMDD", Min: 999, Max: 999, PolicyVersion: "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := authority.NewPolicySet(tc.policies)
			if err == nil {
				t.Fatalf("accepted ambiguous policies %+v: %+v", tc.policies, ps.Policies())
			}
		})
	}
}

func TestNewPolicySetDisjointRangesSelectByRangeNotVersion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []pol
		want     map[string]string // concept id -> policy version
	}{
		{
			"2 below 10",
			[]pol{{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"}, {Namespace: "RMDD", Min: 1000, Max: 1999, PolicyVersion: "10"}},
			map[string]string{"RMDD-5": "2", "RMDD-999": "2", "RMDD-1000": "10", "RMDD-1500": "10", "RMDD-1999": "10"},
		},
		{
			// If versions were compared (as numbers or as strings), one of
			// these two sets would pick the wrong policy.
			"10 below 2",
			[]pol{{Namespace: "RMDD", Min: 1000, Max: 1999, PolicyVersion: "2"}, {Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "10"}},
			map[string]string{"RMDD-5": "10", "RMDD-999": "10", "RMDD-1000": "2", "RMDD-1500": "2"},
		},
		{
			"other namespaces are independent",
			[]pol{{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"}, {Namespace: "GOC", Min: 1, Max: 999, PolicyVersion: "10"}, {Namespace: "A1", Min: 5, Max: 5, PolicyVersion: "x"}},
			map[string]string{"RMDD-5": "2", "GOC-5": "10", "A1-5": "x"},
		},
		{
			"the widest range",
			[]pol{{Namespace: "Z", Min: 1, Max: 999_999_999_999_999_999, PolicyVersion: "all"}},
			map[string]string{"Z-1": "all", "Z-999999999999999999": "all"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := authority.NewPolicySet(tc.policies)
			if err != nil {
				t.Fatalf("disjoint policies refused: %v", err)
			}
			if got := len(ps.Policies()); got != len(tc.policies) {
				t.Fatalf("Policies() has %d policies, want %d", got, len(tc.policies))
			}
			for id, version := range tc.want {
				cid, err := authority.ParseConceptID(id)
				if err != nil {
					t.Fatal(err)
				}
				p, err := ps.Select(cid)
				if err != nil {
					t.Fatalf("Select(%s): %v", id, err)
				}
				if p.PolicyVersion != version || cid.Number < p.Min || cid.Number > p.Max || p.Namespace != cid.Namespace {
					t.Errorf("Select(%s) = %+v, want version %s covering it", id, p, version)
				}
			}
		})
	}
}

func TestNewPolicySetRejectsBadPolicies(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    pol
	}{
		{"empty namespace", pol{Namespace: "", Min: 1, Max: 10, PolicyVersion: "1"}},
		{"lower-case namespace", pol{Namespace: "rmdd", Min: 1, Max: 10, PolicyVersion: "1"}},
		{"namespace starting with a digit", pol{Namespace: "1A", Min: 1, Max: 10, PolicyVersion: "1"}},
		{"namespace with a hyphen", pol{Namespace: "RM-DD", Min: 1, Max: 10, PolicyVersion: "1"}},
		{"namespace too long", pol{Namespace: strings.Repeat("A", authority.MaxNamespaceLen+1), Min: 1, Max: 10, PolicyVersion: "1"}},
		{"min zero", pol{Namespace: "RMDD", Min: 0, Max: 10, PolicyVersion: "1"}},
		{"max below min", pol{Namespace: "RMDD", Min: 10, Max: 9, PolicyVersion: "1"}},
		{"max of 19 digits", pol{Namespace: "RMDD", Min: 1, Max: 1_000_000_000_000_000_000, PolicyVersion: "1"}},
		{"empty version", pol{Namespace: "RMDD", Min: 1, Max: 10, PolicyVersion: ""}},
		{"version with a control character", pol{Namespace: "RMDD", Min: 1, Max: 10, PolicyVersion: "v\n2"}},
		{"version too long", pol{Namespace: "RMDD", Min: 1, Max: 10, PolicyVersion: strings.Repeat("v", 513)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := authority.NewPolicySet([]pol{{Namespace: "GOC", Min: 1, Max: 5, PolicyVersion: "1"}, tc.p}); err == nil {
				t.Fatalf("accepted %+v", tc.p)
			}
		})
	}
	// The longest namespace and a one-number range are fine.
	if _, err := authority.NewPolicySet([]pol{{Namespace: strings.Repeat("A", authority.MaxNamespaceLen), Min: 7, Max: 7, PolicyVersion: "1"}}); err != nil {
		t.Fatalf("longest namespace: %v", err)
	}
}

func TestPolicySelectUncovered(t *testing.T) {
	ps := policies(t) // RMDD 1..999 v2, RMDD 1000..1999 v10, GOC 1..100 v1
	for _, id := range []string{"RMDD-2000", "GOC-101", "NOPE-1", "A1-5"} {
		cid, err := authority.ParseConceptID(id)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ps.Select(cid)
		wantCode(t, "Select "+id, err, errs.CodeInvalid)
	}
	empty, err := authority.NewPolicySet(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = empty.Select(authority.ConceptID{Namespace: "RMDD", Number: 1})
	wantCode(t, "Select on an empty set", err, errs.CodeInvalid)
}

func TestLoadPolicyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[
		{"namespace": "RMDD", "min": 1, "max": 999, "policy_version": "2"},
		{"namespace": "RMDD", "min": 1000, "max": 1999, "policy_version": "10"}
	]`)
	ps, err := authority.LoadPolicyFile(good)
	if err != nil {
		t.Fatalf("good file: %v", err)
	}
	want := []pol{{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"}, {Namespace: "RMDD", Min: 1000, Max: 1999, PolicyVersion: "10"}}
	got := ps.Policies()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("good file: %+v, want %+v", got, want)
	}
	for _, tc := range []struct{ name, body string }{
		{"unknown field", `[{"namespace": "RMDD", "min": 1, "max": 9, "policy_version": "2", "priority": 1}]`},
		{"bad JSON", `[{"namespace": "RMDD", "min": 1,`},
		{"not an array", `{"namespace": "RMDD", "min": 1, "max": 9, "policy_version": "2"}`},
		{"negative number", `[{"namespace": "RMDD", "min": -1, "max": 9, "policy_version": "2"}]`},
		{"data after the array", `[{"namespace": "RMDD", "min": 1, "max": 9, "policy_version": "2"}] [{"namespace": "RMDD", "min": 5, "max": 9, "policy_version": "3"}]`},
		{"overlap", `[{"namespace": "RMDD", "min": 1, "max": 999, "policy_version": "2"}, {"namespace": "RMDD", "min": 999, "max": 1999, "policy_version": "10"}]`},
		{"bad namespace", `[{"namespace": "rmdd", "min": 1, "max": 9, "policy_version": "2"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ps, err := authority.LoadPolicyFile(write(strings.ReplaceAll(tc.name, " ", "_")+".json", tc.body)); err == nil {
				t.Fatalf("accepted %s: %+v", tc.body, ps.Policies())
			}
		})
	}
	if _, err := authority.LoadPolicyFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// The record is bound to the authority's policy: namespace, range and
// version come from the one selected policy, never from the caller.
func TestReserveStoresTheSelectedPolicy(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	lo, hi := uint64(1), uint64(5_000_000)
	for _, tc := range []struct {
		id, version string
		min, max    uint64
	}{
		{"RMDD-5", "2", 1, 999},
		{"RMDD-1500", "10", 1000, 1999},
		{"GOC-19", "1", 1, 100},
	} {
		req := request(tc.id, "alice", "r-"+tc.id)
		req.RangeMin, req.RangeMax = &lo, &hi
		res, err := a.Reserve(ctx, req)
		if err != nil {
			t.Fatalf("reserve %s: %v", tc.id, err)
		}
		for _, rec := range []*authority.Record{res.Record, mustGet(t, a, tc.id, "tenant-a")} {
			if rec.Namespace != strings.Split(tc.id, "-")[0] || rec.PolicyVersion != tc.version || rec.RangeMin != tc.min || rec.RangeMax != tc.max {
				t.Errorf("%s: namespace %s version %s range %d..%d, want version %s range %d..%d",
					tc.id, rec.Namespace, rec.PolicyVersion, rec.RangeMin, rec.RangeMax, tc.version, tc.min, tc.max)
			}
		}
		// Range fields are not part of what the request asks for: a retry
		// that sends other ones (or none) is the same request.
		req.RangeMin, req.RangeMax = nil, nil
		again, err := a.Reserve(ctx, req)
		if err != nil || !again.Replayed || again.Record.ReservationID != res.Record.ReservationID {
			t.Errorf("%s: retry without range fields: %+v %v, want a replay", tc.id, again, err)
		}
	}
	// A caller's range cannot widen the policy: an id outside every policy
	// is refused even when the caller's range covers it.
	req := request("RMDD-4000", "alice", "r-wide")
	req.RangeMin, req.RangeMax = &lo, &hi
	_, err := a.Reserve(ctx, req)
	wantCode(t, "reserve outside every policy with a wide caller range", err, errs.CodeInvalid)
	_, err = a.Get(ctx, "RMDD-4000", "")
	wantCode(t, "get of the refused id", err, errs.CodeNotFound)
}

func TestServiceWithoutPoliciesRefusesEveryReserve(t *testing.T) {
	ctx := context.Background()
	a, err := authority.NewFixture(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Reserve(ctx, request("RMDD-1", "alice", "r1"))
	wantCode(t, "reserve without policies", err, errs.CodeInvalid)
	_, err = a.Get(ctx, "RMDD-1", "")
	wantCode(t, "get after a refused reserve", err, errs.CodeNotFound)
}

func mustGet(t *testing.T, a authority.Authority, id, tenant string) *authority.Record {
	t.Helper()
	rec, err := a.Get(context.Background(), id, tenant)
	if err != nil {
		t.Fatalf("get %s as %q: %v", id, tenant, err)
	}
	return rec
}
