package authority_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/nodes"
)

func versioned(t *testing.T, version uint64, policies ...pol) *authority.PolicySet {
	t.Helper()
	ps, err := authority.NewVersionedPolicySet(version, policies)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// Issue 40 item 2: each node read its own policy file and nothing
// replicated it, so n3 (1..99999) accepted RMDD-50000 while n1 (1..9999)
// refused RMDD-50001. The policy set is replicated: every node validates
// against the one the cluster holds, whatever its own file says; a node's
// file seeds it only when it is newer, and a change an admin made through
// the API stands across a restart of a node with an older file, which
// logs that the cluster's set wins.
func TestEveryNodeValidatesAgainstTheReplicatedPolicySet(t *testing.T) {
	ctx := clusterCtx(t)
	v2 := versioned(t, 2, pol{Namespace: "RMDD", Min: 1, Max: 9999, PolicyVersion: "2"})
	v3 := versioned(t, 3, pol{Namespace: "RMDD", Min: 1, Max: 99999, PolicyVersion: "3"})
	var seeds [3]atomic.Pointer[authority.PolicySet]
	seeds[0].Store(v2)
	seeds[1].Store(v2)
	seeds[2].Store(v3)
	logs := t.TempDir()
	c := clustertest.New(t, clustertest.Options{Nodes: 3, LogDir: logs, Configure: func(i int, cfg *cluster.Config) {
		cfg.Domains = builtin.With(builtin.Options{ConceptPolicies: seeds[i].Load()})
	}})
	client := func(i int) *authority.Client { return authority.NewClient(rawremote.New(c.Node(i).APIAddr())) }
	policyVersion := func(want uint64) bool {
		res, err := client(0).Policies(ctx)
		return err == nil && res.Configured && res.Version == want
	}
	// n3's file is the newest: whichever node seeds first, it wins.
	if !c.Eventually(20*time.Second, func() bool { return policyVersion(3) }) {
		res, err := client(0).Policies(ctx)
		t.Fatalf("the cluster's policy set never became n3's version 3: %+v %v", res, err)
	}
	for i, id := range map[int]string{0: "RMDD-50001", 1: "RMDD-50002", 2: "RMDD-50000"} {
		res, err := client(i).Reserve(ctx, clusterRequest(id, "alice", "r-"+id, time.Hour))
		if err != nil || !res.Created || res.Record.PolicyVersion != "3" || res.Record.RangeMax != 99999 {
			t.Fatalf("reserve %s through n%d: %+v %v, want it bound to the cluster's policy 3", id, i+1, res, err)
		}
	}
	for i := range 3 {
		_, err := client(i).Reserve(ctx, clusterRequest("RMDD-100000", "alice", "r-beyond", time.Hour))
		wantCode(t, "reserve beyond every policy through n"+string(rune('1'+i)), err, errs.CodeInvalid)
	}

	// An admin narrows the set through the API: the next version, 4.
	set, err := client(1).SetPolicies(ctx, authority.PoliciesRequest{Policies: []pol{{Namespace: "RMDD", Min: 1, Max: 60000, PolicyVersion: "4"}}})
	if err != nil || !set.Changed || set.Version != 4 || set.Source != authority.SourceAdmin {
		t.Fatalf("set policies: %+v %v", set, err)
	}
	// n3 restarts on its file (version 3): the API's change stands, and
	// n3 says so in its log.
	c.Stop(2)
	c.Restart(2)
	logFile := filepath.Join(logs, "n3.log")
	if !c.Eventually(20*time.Second, func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Count(string(b), "the cluster's replicated policies win over this node's") >= 1
	}) {
		b, _ := os.ReadFile(logFile)
		t.Fatalf("n3 restarted with an older file never logged that the cluster's set wins:\n%s", b)
	}
	if !policyVersion(4) {
		res, _ := client(0).Policies(ctx)
		t.Fatalf("a restart on an older file changed the policy set: %+v", res)
	}
	_, err = client(2).Reserve(ctx, clusterRequest("RMDD-60001", "alice", "r-60001", time.Hour))
	wantCode(t, "reserve above the admin's range through the restarted n3", err, errs.CodeInvalid)

	// A file with a newer version, loaded explicitly, replaces it.
	seeds[2].Store(versioned(t, 9, pol{Namespace: "RMDD", Min: 1, Max: 70000, PolicyVersion: "9"}))
	c.Stop(2)
	c.Restart(2)
	if !c.Eventually(20*time.Second, func() bool { return policyVersion(9) }) {
		res, _ := client(0).Policies(ctx)
		t.Fatalf("a newer file did not replace the set: %+v", res)
	}
	res, err := client(0).Reserve(ctx, clusterRequest("RMDD-65000", "alice", "r-65000", time.Hour))
	if err != nil || res.Record.PolicyVersion != "9" {
		t.Fatalf("reserve under the newer file's policy through n1: %+v %v", res, err)
	}
}

// The seed rule, decided in Apply: a seed applies to a cluster without a
// set or with an older one; an admin's replacement takes the next version
// (or a newer one it names), so no seed of the same files undoes it.
func TestSeedNeverUndoesAnAdminChange(t *testing.T) {
	ctx := context.Background()
	a, err := authority.NewFixture(nil)
	if err != nil {
		t.Fatal(err)
	}
	file := versioned(t, 0, pol{Namespace: "RMDD", Min: 1, Max: 99, PolicyVersion: "file"})
	if res, err := a.Policies(ctx); err != nil || res.Configured {
		t.Fatalf("a fresh fixture has policies: %+v %v", res, err)
	}
	_, err = a.Reserve(ctx, request("RMDD-1", "alice", "r1"))
	wantCode(t, "reserve without a policy set", err, errs.CodeInvalid)

	seeded, err := a.Seed(ctx, file)
	if err != nil || !seeded.Changed || seeded.Version != 0 || seeded.Source != authority.SourceSeed {
		t.Fatalf("first seed: %+v %v", seeded, err)
	}
	admin, err := a.SetPolicies(ctx, authority.PoliciesRequest{Policies: []pol{{Namespace: "RMDD", Min: 1, Max: 9, PolicyVersion: "api"}}})
	if err != nil || !admin.Changed || admin.Version != 1 || admin.Source != authority.SourceAdmin {
		t.Fatalf("admin set: %+v %v", admin, err)
	}
	for _, seed := range []*authority.PolicySet{file, versioned(t, 1, pol{Namespace: "RMDD", Min: 1, Max: 99, PolicyVersion: "file-1"})} {
		again, err := a.Seed(ctx, seed)
		if err != nil || again.Changed || again.Version != 1 || again.Digest != admin.Digest {
			t.Fatalf("seed of version %d after the admin's change: %+v %v, want the admin's set kept", seed.Version(), again, err)
		}
	}
	_, err = a.Reserve(ctx, request("RMDD-50", "alice", "r50"))
	wantCode(t, "reserve outside the admin's set", err, errs.CodeInvalid)
	// The same set again changes nothing; an explicit version must be newer.
	same, err := a.SetPolicies(ctx, authority.PoliciesRequest{Policies: admin.Policies})
	if err != nil || same.Changed || same.Version != 1 {
		t.Fatalf("the same set again: %+v %v", same, err)
	}
	_, err = a.SetPolicies(ctx, authority.PoliciesRequest{Version: 1, Policies: file.Policies()})
	wantCode(t, "an explicit version that is not newer", err, errs.CodeConflict)
	newer, err := a.Seed(ctx, versioned(t, 7, pol{Namespace: "RMDD", Min: 1, Max: 99, PolicyVersion: "file-7"}))
	if err != nil || !newer.Changed || newer.Version != 7 {
		t.Fatalf("a newer seed: %+v %v", newer, err)
	}
	if res, err := a.Reserve(ctx, request("RMDD-50", "alice", "r50")); err != nil || res.Record.PolicyVersion != "file-7" {
		t.Fatalf("reserve under the newer seed: %+v %v", res, err)
	}
	// Bad sets are refused by Apply too, not only by the service.
	_, err = a.SetPolicies(ctx, authority.PoliciesRequest{Policies: []pol{
		{Namespace: "RMDD", Min: 1, Max: 10, PolicyVersion: "a"}, {Namespace: "RMDD", Min: 5, Max: 20, PolicyVersion: "b"}}})
	wantCode(t, "overlapping set", err, errs.CodeInvalid)
}

// Only an admin for every tenant replaces the set; a seed is the node's
// own configuration, proposed by the node or through the authority's
// in-server adapter, never by a caller.
func TestSettingPoliciesNeedsAnAdmin(t *testing.T) {
	local, err := fsmtest.New(nodes.Module(), authority.Module())
	if err != nil {
		t.Fatal(err)
	}
	member := fsm.WithPrincipal(context.Background(), identity.Principal{ID: "m", Tenants: []string{"*"}, Roles: []string{identity.RoleMember}})
	tenantAdmin := fsm.WithPrincipal(context.Background(), identity.Principal{ID: "ta", Tenants: []string{"tenant-a"}, Roles: []string{identity.RoleAdmin}})
	admin := fsm.WithPrincipal(context.Background(), identity.Principal{ID: "a", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}})
	req := authority.PoliciesRequest{Policies: []pol{{Namespace: "RMDD", Min: 1, Max: 9, PolicyVersion: "1"}}}
	direct := authority.NewService(local, local, nil)
	for name, ctx := range map[string]context.Context{"member": member, "tenant admin": tenantAdmin} {
		_, err := direct.SetPolicies(ctx, req)
		wantCode(t, name+" sets policies", err, errs.CodeForbidden)
		_, err = direct.Seed(ctx, policies(t))
		wantCode(t, name+" seeds policies", err, errs.CodeForbidden)
	}
	// Through the adapter, a member's reserve seeds the node's own set.
	viaAdapter := authority.NewService(asAdapter{local}, asAdapter{local}, policies(t))
	if res, err := viaAdapter.Reserve(member, request("RMDD-5", "", "r5")); err != nil || res.Record.PolicyVersion != "2" {
		t.Fatalf("a member's first reserve through a node with policies: %+v %v", res, err)
	}
	_, err = viaAdapter.SetPolicies(member, req)
	wantCode(t, "member replaces policies through the adapter", err, errs.CodeForbidden)
	if res, err := direct.SetPolicies(admin, req); err != nil || !res.Changed || res.Version != 1 {
		t.Fatalf("admin sets policies: %+v %v", res, err)
	}
}

// Files: versioned, bare arrays, prefixes.
func TestLoadVersionedPolicyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	if err := os.WriteFile(path, []byte(`{"version": 3, "policies": [{"namespace": "RMDD", "prefix": "SEARCH", "min": 1, "max": 9, "policy_version": "s"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := authority.LoadPolicyFile(path)
	if err != nil || ps.Version() != 3 || len(ps.Policies()) != 1 || ps.Policies()[0].Prefix != "SEARCH" {
		t.Fatalf("versioned file: %+v %v", ps, err)
	}
	for _, body := range []string{
		`{"version": 3, "policies": [], "extra": 1}`,
		`{"version": -1, "policies": []}`,
		`{"version": 9007199254740992, "policies": []}`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if ps, err := authority.LoadPolicyFile(path); err == nil {
			t.Errorf("accepted %s: %+v", body, ps)
		}
	}
}
