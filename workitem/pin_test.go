package workitem_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
)

// TestAnswersPinned pins the answer every work-item and reservation
// command gets for a corpus of inputs (the fuzz seeds of both fuzz
// targets: valid, cut short, bit-flipped and undecodable payloads, an
// empty map, an unknown field), from every fuzz principal, at every
// version and one above, unkeyed and under two scopes, after each fuzz
// seed state (the work-item one, ungated; the reservation one, with
// every command enabled). The handlers' prologue (decode, validate,
// scope and access checks) decides which error a bad command gets, and a
// log replays only if that never changes: the golden files were written
// by the binary from before fsm.Typed.
func TestAnswersPinned(t *testing.T) {
	types := []log.Type{workitem.CmdSubmit, workitem.CmdSubmitBatch, workitem.CmdClaim, workitem.CmdComplete, workitem.CmdCancel,
		workitem.CmdPutHost, workitem.CmdTelemetry, workitem.CmdSetProfiles, workitem.CmdReserve, workitem.CmdRelease,
		workitem.CmdReclaim, workitem.CmdRewriteExtension}
	payloads := fuzzPayloads()
	for typ, ps := range resFuzzPayloads(t) {
		payloads[typ] = append(payloads[typ], ps...)
	}
	principals := resFuzzPrincipals
	for _, c := range []struct {
		name string
		seed wiSeed
	}{{"items", newSeed(t)}, {"reservations", resSeed(t)}} {
		t.Run(c.name, func(t *testing.T) {
			set := fsmtest.PinSet{Types: types, Payloads: payloads, Principals: principals, Scopes: []string{c.seed.scope, "workitem/fuzz"}}
			fsmtest.Pin(t, c.seed.replica(t), []fsm.Module{workitem.Module()}, set, c.seed.now, "testdata/pin-"+c.name+".golden")
		})
	}
}
