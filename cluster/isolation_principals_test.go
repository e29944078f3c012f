package cluster_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// isoPrincipalRows are the matrix rows of /v1/principals (package
// access): admins only, each refusal changing nothing. The cluster's
// table is seeded first with the iso principals (what a node's
// --principals file does), so the registry in force stays the same.
func isoPrincipalRows(t *testing.T, c *clustertest.Cluster, leader int) []isoRoute {
	t.Helper()
	var file identity.File
	for _, p := range isoPrincipals {
		file.Principals = append(file.Principals, identity.PrincipalConfig{ID: p.id, Tenants: p.tenants, Roles: p.roles,
			TokenSHA256: []string{identity.HashToken(isoToken(p.id))}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := c.WaitLeader(10 * time.Second)
	res, err := access.NewService(c.Node(l), c.Node(l)).Seed(ctx, &file)
	if err != nil || !res.Applied {
		t.Fatalf("seed the principal table: %+v %v", res, err)
	}
	for _, i := range c.Running() {
		if err := c.Node(i).FSM().WaitApplied(ctx, res.Index); err != nil {
			t.Fatal(err)
		}
	}
	table := func(t *testing.T) string { return isoAdminGet(t, c, leader, "/v1/principals") }
	add := access.PutRequest{ID: "iso-new", Tenants: []string{"a"}, Roles: []string{identity.RoleReader},
		TokenSHA256: []string{identity.HashToken("iso-secret-token-iso-new")}}
	rotate := access.RotateRequest{TokenSHA256: []string{identity.HashToken("iso-secret-token-iso-new-2")}}
	return []isoRoute{
		{route: "GET /v1/principals", access: isoAdmin, valid: isoCase{name: "admin", who: "admin", status: http.StatusOK, ok: true}},
		{route: "POST /v1/principals", access: isoAdmin, body: func(string) any { return add },
			valid: isoCase{name: "admin", who: "admin", body: add, status: http.StatusCreated, ok: true}, state: table},
		{route: "POST /v1/principals/{id}/rotate", path: "/v1/principals/iso-new/rotate", access: isoAdmin, body: func(string) any { return rotate },
			valid: isoCase{name: "admin", who: "admin", body: rotate, status: http.StatusOK, ok: true}, state: table},
		{route: "DELETE /v1/principals/{id}", path: "/v1/principals/iso-new", access: isoAdmin,
			valid: isoCase{name: "admin", who: "admin", status: http.StatusOK, ok: true}, state: table},
	}
}
