package allocation

import (
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// TestAnswersPinned pins the answer every allocation command gets for a
// corpus of inputs (the fuzz seeds: valid, cut short, bit-flipped and
// undecodable payloads, an empty map, an unknown field), from every fuzz
// principal, at every version and one above, unkeyed and keyed, after
// the fuzz seed state at version 1 and at version 2. The handlers'
// prologue (decode, validate, the space's access check) decides which
// error a bad command gets, and a log replays only if that never
// changes: the golden files were written by the binary from before
// fsm.Typed.
func TestAnswersPinned(t *testing.T) {
	set := fsmtest.PinSet{Types: fuzzTypes, Payloads: fsmtest.PayloadVariants(fuzzPayloads()), Principals: fuzzPrincipals, Scopes: []string{"allocation/fuzz"}}
	for _, v2 := range []bool{false, true} {
		name := map[bool]string{false: "v1", true: "v2"}[v2]
		t.Run(name, func(t *testing.T) {
			seed := newFuzzSeed(t, v2)
			fsmtest.Pin(t, seed.replica(t), []fsm.Module{Module()}, set, seed.now, "testdata/pin-"+name+".golden")
		})
	}
}
