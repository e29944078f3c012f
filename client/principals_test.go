package client_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
)

// The principals types mirror package access's.
func TestPrincipalsWireTypesMatchTheServer(t *testing.T) {
	for _, p := range []struct{ client, server any }{
		{client.PrincipalRequest{}, access.PutRequest{}},
		{client.RotateRequest{}, access.RotateRequest{}},
		{client.PrincipalInfo{}, access.PrincipalInfo{}},
		{client.PrincipalList{}, access.ListResult{}},
		{client.PrincipalChange{}, access.ChangeResult{}},
	} {
		ct, st := reflect.TypeOf(p.client), reflect.TypeOf(p.server)
		compareJSON(t, ct.Name(), ct, st, map[[2]reflect.Type]bool{})
	}
}

// Add, list, rotate and remove through the client, on a node whose
// file seeded the table; a member is forbidden.
func TestPrincipalsLifecycle(t *testing.T) {
	file := identity.File{Principals: []identity.PrincipalConfig{
		{ID: "root", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("p-root")}},
		{ID: "agent", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}, TokenSHA256: []string{identity.HashToken("p-agent")}},
	}}
	reg, err := identity.NewRegistry(file.Principals)
	must(t, err)
	guard := access.NewGuard()
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Principals: reg, Domains: func(int) []domain.Domain {
		_, err := guard.SetFile(file)
		must(t, err)
		return builtin.With(builtin.Options{Access: guard})
	}})
	if !c.Eventually(20*time.Second, func() bool { src, _ := guard.InForce(); return src == "table" }) {
		t.Fatal("the file did not seed the table")
	}
	as := func(token string) *client.Principals {
		cl, err := client.New(c.URLs(), client.WithToken(token), client.WithTimeout(10*time.Second))
		must(t, err)
		t.Cleanup(cl.Close)
		return cl.Principals()
	}
	root := as("p-root")
	_, err = as("p-agent").Add(ctxOf(t), client.PrincipalRequest{ID: "x", Tenants: []string{"*"}, Roles: []string{"admin"}, TokenSHA256: []string{identity.HashToken("x")}})
	wantCode(t, err, errs.CodeForbidden)

	added, err := root.Add(ctxOf(t), client.PrincipalRequest{ID: "ops", Tenants: []string{"t"}, Roles: []string{"member"}, TokenSHA256: []string{identity.HashToken("p-ops")}})
	must(t, err)
	if !added.Created || added.Count != 3 || added.Principal.Tokens[0] != access.Fingerprint(identity.HashToken("p-ops")) {
		t.Fatalf("add: %+v", added)
	}
	if _, err := as("p-ops").List(ctxOf(t), ""); errs.CodeOf(err) != errs.CodeForbidden {
		t.Errorf("a member lists: %v, want forbidden", err)
	}
	list, err := root.List(ctxOf(t), "")
	must(t, err)
	if !list.Configured || len(list.Principals) != 3 || list.Source != access.SourceAdmin {
		t.Fatalf("list: %+v", list)
	}
	if _, err := root.Rotate(ctxOf(t), "ops", identity.HashToken("p-ops-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := as("p-ops").List(ctxOf(t), ""); errs.CodeOf(err) != errs.CodeUnauthorized {
		t.Errorf("the rotated-out token: %v, want unauthorized", err)
	}
	removed, err := root.Remove(ctxOf(t), "ops")
	must(t, err)
	if !removed.Removed || removed.Count != 2 {
		t.Errorf("remove: %+v", removed)
	}
	_, err = root.Remove(ctxOf(t), "ops")
	wantCode(t, err, errs.CodeNotFound)
}
