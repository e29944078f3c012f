package authority_test

import (
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
)

// TestAnswersPinned pins the answer every authority command gets for a
// corpus of inputs (the fuzz seeds: valid, cut short, bit-flipped and
// undecodable payloads, an empty map, an unknown field), from every fuzz
// principal, directly and through the authority's adapter, at every
// version and one above, unkeyed and keyed, after one reservation. The
// handlers' prologue decides which error a bad command gets, and a log
// replays only if that never changes: the golden file was written by the
// binary from before fsm.Typed.
func TestAnswersPinned(t *testing.T) {
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
	set := fsmtest.PinSet{Types: authorityFuzzTypes, Payloads: authorityFuzzPayloads(t), Principals: authorityFuzzPrincipals,
		Scopes: []string{"authority/fuzz"}, Adapters: []string{authority.Name}}
	fsmtest.Pin(t, local.FSM, []fsm.Module{authority.Module()}, set, fsmtest.Epoch+1000, "testdata/pin.golden")
}
