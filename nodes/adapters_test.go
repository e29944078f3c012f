package nodes_test

import (
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// The node primitives accept in place of the admin role only the
// in-server adapters their module lists (AcceptAdapters): a tenant's
// create or get marked with the listed "authority" is applied, the same
// marked "other" is refused with forbidden and changes nothing, and a
// module that lists none accepts no adapter. Apply and queries decide
// alike on every replica: the list is the module's static configuration.
func TestOnlyListedAdaptersReachTheRawAPI(t *testing.T) {
	tenant := identity.Principal{ID: "alice", Tenants: []string{"t1"}, Roles: []string{"writer"}}
	create := func(l *fsmtest.Local, id, adapter string) *fsm.Response {
		t.Helper()
		res, err := l.Propose(context.Background(), log.Command{Type: nodes.CmdCreate, Version: 1, Principal: tenant, Adapter: adapter,
			Payload: log.MustMarshal(nodes.CreateCommand{NodeID: id, Labels: []string{"x"}})})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	get := func(l *fsmtest.Local, id, adapter string) error {
		_, err := l.FSM.Query(tenant, fsm.Query{Type: nodes.QueryGet, Adapter: adapter, Payload: log.MustMarshal(nodes.GetQuery{NodeID: id})})
		return err
	}
	listed, err := fsmtest.New(nodes.Module(nodes.AcceptAdapters("authority")))
	if err != nil {
		t.Fatal(err)
	}
	if res := create(listed, "by-authority", "authority"); res.Err != nil {
		t.Fatalf("a create through the listed adapter: %v", res.Err)
	}
	if err := get(listed, "by-authority", "authority"); err != nil {
		t.Fatalf("a get through the listed adapter: %v", err)
	}
	if res := create(listed, "by-other", "other"); res.Err == nil || res.Err.Code != errs.CodeForbidden {
		t.Fatalf("a create through an unlisted adapter: %+v, want forbidden", res.Err)
	}
	if err := get(listed, "by-authority", "other"); errs.CodeOf(err) != errs.CodeForbidden {
		t.Fatalf("a get through an unlisted adapter: %v, want forbidden", err)
	}
	if err := get(listed, "by-other", "authority"); errs.CodeOf(err) != errs.CodeNotFound {
		t.Fatalf("the refused create left a node behind (get: %v)", err)
	}

	none, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	if res := create(none, "by-authority", "authority"); res.Err == nil || res.Err.Code != errs.CodeForbidden {
		t.Fatalf("a module listing no adapter accepted one: %+v", res.Err)
	}
}
