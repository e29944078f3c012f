package projection_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/projection"
)

// TestAnswersPinned pins the answer every projection command gets for a
// corpus of inputs (the fuzz seeds: valid, cut short, bit-flipped and
// undecodable payloads, an empty map, an unknown field), from every fuzz
// principal, at every version and one above, unkeyed and keyed, after
// the fuzz seed state. The handlers' prologue (decode, validate, access
// checks) decides which error a bad command gets, and a log replays only
// if that never changes: the golden file was written by the binary from
// before fsm.Typed.
func TestAnswersPinned(t *testing.T) {
	seed := newProjSeed(t)
	f, _ := seed.replica(t)
	set := fsmtest.PinSet{Types: projTypes, Payloads: fuzzPayloads(seed), Principals: fuzzPrincipals, Scopes: []string{"projection/fuzz"}}
	fsmtest.Pin(t, f, []fsm.Module{projection.Module()}, set, seed.now, "testdata/pin.golden")
}
