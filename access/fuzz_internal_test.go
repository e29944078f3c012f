package access

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

// The fuzz's command types, principals and seed table.
var (
	fuzzTypes      = []log.Type{CmdPut, CmdRemove, CmdRotate, CmdSeed}
	fuzzPrincipals = []identity.Principal{
		{}, // the trusted node itself
		{ID: "root", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}},
		{ID: "a-admin", Tenants: []string{"a"}, Roles: []string{identity.RoleAdmin}},
		{ID: "m", Tenants: []string{"*"}, Roles: []string{identity.RoleMember}},
	}
	fuzzSeed = seedCmd{FileVersion: 1, Principals: []identity.PrincipalConfig{
		{ID: "root", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("root-token")}},
		{ID: "app", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}, TokenSHA256: []string{identity.HashToken("app-token")}},
	}}
)

// fuzzReplica is an FSM holding the access module and the seed table,
// the same on every call (fixed stamps, fixed indexes).
func fuzzReplica(t testing.TB) *fsm.FSM {
	t.Helper()
	l, err := fsmtest.New(Module())
	if err != nil {
		t.Fatal(err)
	}
	payload, err := log.Marshal(fuzzSeed)
	if err != nil {
		t.Fatal(err)
	}
	res := fuzzApply(t, l.FSM, log.Command{Type: CmdSeed, Version: 1, Stamp: 1000, Payload: payload})
	if res.Err != nil {
		t.Fatalf("seed: %v", res.Err)
	}
	return l.FSM
}

func fuzzApply(t testing.TB, f *fsm.FSM, cmd log.Command) *fsm.Response {
	t.Helper()
	data, err := log.Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Response)
	if !ok || res == nil {
		t.Fatal("Apply returned no *fsm.Response")
	}
	return res
}

func accessTables(table string) bool { return strings.HasPrefix(table, "access_") }

// FuzzApplyAccess applies arbitrary payload bytes, in a valid envelope of
// each access command and as each principal, after the seed table.
// Whatever the bytes: no panic; a refused command changes no access
// table; only the trusted node or an admin of every tenant changes
// anything; the table keeps an admin of every tenant with a credential;
// and a second replica applying the same entry answers and hashes the
// same.
func FuzzApplyAccess(f *testing.F) {
	hash := identity.HashToken
	valid := map[log.Type][]any{
		CmdPut: {
			putCmd{Principal: identity.PrincipalConfig{ID: "new", Tenants: []string{"b"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{hash("n")}}},
			putCmd{Principal: identity.PrincipalConfig{ID: "root", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}, TokenSHA256: []string{hash("r")}}, Replace: true},
		},
		CmdRemove: {removeCmd{ID: "app"}, removeCmd{ID: "root"}},
		CmdRotate: {rotateCmd{ID: "app", TokenSHA256: []string{hash("x")}}, rotateCmd{ID: "root", TokenSHA256: []string{hash("app-token")}}},
		CmdSeed:   {seedCmd{FileVersion: 2, Principals: fuzzSeed.Principals[1:]}, fuzzSeed},
	}
	for typ, payloads := range fsmtest.PayloadVariants(valid) {
		kind := uint8(0)
		for k, ft := range fuzzTypes {
			if ft == typ {
				kind = uint8(k)
			}
		}
		for i, p := range payloads {
			f.Add(kind, p, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte, who uint8) {
		cmd := log.Command{Type: fuzzTypes[int(kind)%len(fuzzTypes)], Version: 1, Stamp: 2000,
			Principal: fuzzPrincipals[int(who)%len(fuzzPrincipals)], Payload: payload}
		if _, err := log.Encode(cmd); err != nil {
			t.Skip("not a valid envelope:", err)
		}
		a := fuzzReplica(t)
		before := fsmtest.ReadStored(t, a).Digest(accessTables)
		res := fuzzApply(t, a, cmd)
		if n := a.Panics(); n != 0 {
			t.Fatalf("%d handler panics", n)
		}
		changed := fsmtest.ReadStored(t, a).Digest(accessTables) != before
		if res.Err != nil && changed {
			t.Fatalf("a refused command (%v) changed the access tables", res.Err)
		}
		if changed && mayChange(cmd.Principal) != nil {
			t.Fatalf("principal %q, who may not change principals, changed them", cmd.Principal.ID)
		}
		rows := fsmtest.Rows[principalRow](t, fsmtest.ReadStored(t, a), tablePrincipals)
		kept := false
		for _, r := range rows {
			kept = kept || superAdmin(r.config())
		}
		if len(rows) > 0 && !kept && cmd.Type != CmdSeed {
			t.Fatalf("the table lost its last admin of every tenant: %+v", rows)
		}
		b := fuzzReplica(t)
		resB := fuzzApply(t, b, cmd)
		if errs.CodeOf(res.Err) != errs.CodeOf(resB.Err) || !bytes.Equal(res.Result, resB.Result) {
			t.Fatalf("replicas answered %v and %v", res.Err, resB.Err)
		}
		fsmtest.AssertSameState(t, a, b)
	})
}
