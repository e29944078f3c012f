package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/nodes"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

func TestTLSClusterForwardsAndJoins(t *testing.T) {
	reg, err := identity.NewRegistry([]identity.PrincipalConfig{{ID: "ops", Tenants: []string{"*"}, Roles: []string{"admin"}, TokenSHA256: []string{identity.HashToken("admin-token")}}})
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.New(t, clustertest.Options{Nodes: 3, TCP: true, TLS: true, Principals: reg})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	n := c.Node(follower)
	ctx := fsm.WithPrincipal(context.Background(), mustPrincipal(t, reg, "admin-token"))
	res, err := nodes.On(n).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "over-tls"})
	if err != nil || !res.Created {
		t.Fatalf("forwarded create over TLS: %+v %v", res, err)
	}
	c.WaitConverged(10 * time.Second)
}

func mustPrincipal(t *testing.T, reg *identity.Registry, token string) identity.Principal {
	t.Helper()
	got, ok := reg.ByToken(token)
	if !ok {
		t.Fatalf("no principal for token")
	}
	return got
}
