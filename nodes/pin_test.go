package nodes_test

import (
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// TestAnswersPinned pins the answer node_create and node_cas get for a
// corpus of inputs (valid payloads of both versions, cut short,
// bit-flipped and undecodable ones, an empty map, an unknown field),
// from the trusted host, an admin, a member and a reader, directly and
// through an accepted and an unknown adapter, at every version and one
// above, unkeyed and keyed, after two nodes. Access is judged before the
// payload is decoded, and a log replays only if which error a bad
// command gets never changes: the golden file was written by the binary
// from before fsm.Typed.
func TestAnswersPinned(t *testing.T) {
	mod := nodes.Module(nodes.AcceptAdapters("adapter"))
	l, err := fsmtest.New(mod)
	if err != nil {
		t.Fatal(err)
	}
	nc := nodes.On(l)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: id, Labels: []string{"x"}, Properties: map[string]any{"n": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	valid := map[log.Type][][]byte{}
	for _, r := range []nodes.CreateRequest{
		{NodeID: "a", Labels: []string{"x"}, Properties: map[string]any{"n": 2}},
		{NodeID: "c", Labels: []string{"y", "x"}, Properties: map[string]any{"n": 3}, SetNow: map[string]int64{"at": 5}},
		{NodeID: "d", Properties: map[string]any{"n": 4}, IndexFields: nodes.IndexFields{SetIndex: []string{"seq"}}},
		{NodeID: "e/..", Properties: map[string]any{"n": nil}},
	} {
		_, body, err := r.Command()
		if err != nil {
			t.Fatal(err)
		}
		valid[nodes.CmdCreate] = append(valid[nodes.CmdCreate], body)
	}
	for _, r := range []nodes.CASRequest{
		{NodeID: "a", Conditions: map[string]any{"n": 1}, Updates: map[string]any{"n": 5}},
		{NodeID: "b", Conditions: map[string]any{"n": 9}, Updates: map[string]any{"n": 5}},
		{NodeID: "zz", Updates: map[string]any{"n": 5}, IndexFields: nodes.IndexFields{SetIndex: []string{"seq"}}},
	} {
		_, body, err := r.Command()
		if err != nil {
			t.Fatal(err)
		}
		valid[nodes.CmdCAS] = append(valid[nodes.CmdCAS], body)
	}
	set := fsmtest.PinSet{
		Types:    []log.Type{nodes.CmdCreate, nodes.CmdCAS},
		Payloads: fsmtest.EncodedVariants(valid),
		Principals: []identity.Principal{{},
			{ID: "admin", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}},
			{ID: "member", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}},
			{ID: "reader", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}}},
		Scopes:   []string{"nodes/pin"},
		Adapters: []string{"adapter", "other"},
	}
	fsmtest.Pin(t, l.FSM, []fsm.Module{mod}, set, fsmtest.Epoch+1000, "testdata/pin.golden")
}
