package authority_test

import (
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

var authorityFuzzTypes = []log.Type{authority.CmdSetPolicies, authority.CmdReserve, authority.CmdReclaim}

var authorityFuzzPrincipals = []identity.Principal{
	{},
	{ID: "admin", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}},
	{ID: "member", Tenants: []string{"tenant-a"}, Roles: []string{identity.RoleMember}},
}

// authorityFuzzPayloads are valid payloads of each authority command
// type, and broken ones.
func authorityFuzzPayloads(t testing.TB) map[log.Type][][]byte {
	create := nodes.CreateRequest{NodeID: "concept-reservation:RMDD-1", Labels: []string{"concept-reservation"},
		Properties: map[string]any{"schema": "concept-reservation/v1", "state": "reserved", "fence": 1}}
	cv, cbody, err := create.Command()
	if err != nil {
		t.Fatal(err)
	}
	cas := nodes.CASRequest{NodeID: "concept-reservation:RMDD-1", Conditions: map[string]any{"fence": 1}, Updates: map[string]any{"fence": 2}}
	xv, xbody, err := cas.Command()
	if err != nil {
		t.Fatal(err)
	}
	type bound struct {
		ConceptID   string `msgpack:"concept_id"`
		NodeVersion uint16 `msgpack:"node_version"`
		Node        []byte `msgpack:"node"`
	}
	type set struct {
		Version  uint64                             `msgpack:"version"`
		Policies []authority.ConceptNamespacePolicy `msgpack:"policies"`
		Seed     bool                               `msgpack:"seed,omitempty"`
	}
	valid := map[log.Type][]any{
		authority.CmdSetPolicies: {set{Version: 2, Policies: []authority.ConceptNamespacePolicy{{Namespace: "RMDD", Prefix: "S", Min: 1, Max: 9, PolicyVersion: "x"}}, Seed: true}},
		authority.CmdReserve:     {bound{ConceptID: "RMDD-1", NodeVersion: cv, Node: cbody}, bound{ConceptID: "RMDD-2", NodeVersion: cv, Node: cbody}},
		authority.CmdReclaim:     {bound{ConceptID: "RMDD-1", NodeVersion: xv, Node: xbody}},
	}
	return fsmtest.PayloadVariants(valid)
}

// FuzzApplyAuthority: whatever bytes the authority's commands carry, from
// whoever, Apply never panics, never answers internal, and a command that
// fails changes nothing.
func FuzzApplyAuthority(f *testing.F) {
	for typ, payloads := range authorityFuzzPayloads(f) {
		for i, p := range payloads {
			for k, t := range authorityFuzzTypes {
				if t == typ {
					f.Add(uint8(k), p, uint8(i))
				}
			}
		}
	}
	notMeta := func(table string) bool { return table != "meta" }
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte, who uint8) {
		local, err := fsmtest.New(nodes.Module(nodes.AcceptAdapters(authority.Name)), authority.Module())
		if err != nil {
			t.Fatal(err)
		}
		if err := local.Enable(fsm.ServedBy(nodes.Module(), authority.Module())); err != nil {
			t.Fatal(err)
		}
		svc := authority.NewService(local, local, policies(t))
		if _, err := svc.Reserve(context.Background(), request("RMDD-1", "alice", "r1")); err != nil {
			t.Fatal(err)
		}
		cmd := log.Command{Type: authorityFuzzTypes[int(kind)%len(authorityFuzzTypes)], Version: 1,
			Principal: authorityFuzzPrincipals[int(who)%len(authorityFuzzPrincipals)], Payload: payload}
		if who%2 == 1 {
			cmd.Adapter = authority.Name
		}
		data, err := log.Encode(cmd)
		if err != nil {
			t.Skip("not a valid envelope:", err)
		}
		before := fsmtest.ReadStored(t, local.FSM)
		res := local.ApplyRaw(data)
		if res == nil {
			t.Fatal("Apply returned no *fsm.Response")
		}
		if n := local.FSM.Panics(); n != 0 {
			t.Fatalf("%d handler panics", n)
		}
		if res.Err != nil && res.Err.Code == "internal" {
			t.Fatalf("an internal error: %v", res.Err)
		}
		after := fsmtest.ReadStored(t, local.FSM)
		if res.Err != nil && after.Digest(notMeta) != before.Digest(notMeta) {
			t.Fatalf("a failed command (%v) changed the state", res.Err)
		}
	})
}
