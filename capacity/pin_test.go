package capacity_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// TestAnswersPinned pins the answer every capacity command gets for a
// corpus of inputs (the fuzz seeds: valid, cut short, bit-flipped and
// undecodable payloads, an empty map, an unknown field), from every fuzz
// principal (none, member, reader, controller, another tenant's member),
// at every version and one above, unkeyed and under its scopes, after
// the fuzz seed state, gated or not. The handlers' prologue (decode,
// validate, graph, scope and access checks) decides which error a bad
// command gets, and a log replays only if that never changes: the golden
// files were written by the binary from before fsm.Typed.
func TestAnswersPinned(t *testing.T) {
	ops := []string{"acquire", "renew", "release"}
	var scopes []string
	for _, op := range ops {
		scopes = append(scopes, capGraphScope(op, "t", ""), capGraphScope(op, "t", "g2"))
	}
	// The tenant-keyed scopes (acquire 4, renew and release 3), appended
	// after the scopes pinned before them, and one of tenant u.
	for _, op := range ops {
		scopes = append(scopes, capTenantScope(op, "t", ""), capTenantScope(op, "t", "g2"))
	}
	scopes = append(scopes, capTenantScope("acquire", "u", ""))
	set := fsmtest.PinSet{Types: capTypes, Payloads: fuzzPayloads(), Principals: fuzzPrincipals,
		Scopes: append([]string{"capacity/fuzz"}, scopes...)}
	for _, gated := range []bool{false, true} {
		name := map[bool]string{false: "ungated", true: "gated"}[gated]
		t.Run(name, func(t *testing.T) {
			seed := newCapSeed(t, gated)
			fsmtest.Pin(t, seed.replica(t), []fsm.Module{capacity.Module()}, set, seed.now, "testdata/pin-"+name+".golden")
		})
	}
}
