package fsmtest_test

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/fsm/fsmtest"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/nodes"
)

// A unit test of code built on a domain's client runs it over a Local:
// no raft, no network, the same indexes every run.
func Example() {
	local, err := fsmtest.New(nodes.Module())
	if err != nil {
		panic(err)
	}
	c := nodes.On(local)
	admin := identity.Principal{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
	ctx := fsm.WithPrincipal(context.Background(), admin)
	res, err := c.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "n1", Labels: []string{"demo"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Created, local.Log()[0].Index)
	// Output: true 1
}
