package linearizability

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func allocOp(client int, call, ret int64, in AllocInput, out any) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

func TestAllocationModelHistories(t *testing.T) {
	create := AllocInput{Kind: AllocCreate, Key: "k"}
	won := func(h string) AllocOutput { return AllocOutput{Won: true, Holder: h} }
	lost := func(h string) AllocOutput { return AllocOutput{Holder: h} }
	window := func(n int) AllocInput { return AllocInput{Kind: AllocWindow, Key: "k", Count: n} }
	windowOut := func(rs ...AllocOutput) AllocWindowOutput { return AllocWindowOutput{Results: rs} }
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"one winner, a loser naming it", []porcupine.Operation{
			allocOp(0, 0, 10, create, won("task:1")), allocOp(1, 1, 11, create, lost("task:1"))}, porcupine.Ok},
		{"two winners", []porcupine.Operation{
			allocOp(0, 0, 10, create, won("task:1")), allocOp(1, 1, 11, create, won("task:2"))}, porcupine.Illegal},
		{"a loser naming another", []porcupine.Operation{
			allocOp(0, 0, 10, create, won("task:1")), allocOp(1, 20, 30, create, lost("task:9"))}, porcupine.Illegal},
		{"phantom after abort", []porcupine.Operation{
			allocOp(0, 0, 10, AllocInput{Kind: AllocReserve, Key: "k", Holder: "res:p"}, won("res:p")),
			allocOp(0, 11, 12, AllocInput{Kind: AllocAbort, Key: "k", Holder: "res:p"}, won("")),
			allocOp(1, 20, 30, create, lost("res:p"))}, porcupine.Illegal},
		{"create after abort", []porcupine.Operation{
			allocOp(0, 0, 10, AllocInput{Kind: AllocReserve, Key: "k", Holder: "res:p"}, won("res:p")),
			allocOp(1, 5, 8, create, lost("res:p")),
			allocOp(0, 11, 12, AllocInput{Kind: AllocAbort, Key: "k", Holder: "res:p"}, won("")),
			allocOp(1, 20, 30, create, won("task:3"))}, porcupine.Ok},
		{"an unknown create explains a loser", []porcupine.Operation{
			allocOp(0, 0, Pending, create, UnknownOutput{}), allocOp(1, 20, 30, create, lost("task:4"))}, porcupine.Ok},
		{"withdraw frees", []porcupine.Operation{
			allocOp(0, 0, 10, create, won("task:1")),
			allocOp(0, 11, 12, AllocInput{Kind: AllocWithdraw, Key: "k", Holder: "task:1"}, won("")),
			allocOp(1, 20, 30, create, won("task:2"))}, porcupine.Ok},
		{"a window: one winner, its loser names it", []porcupine.Operation{
			allocOp(0, 0, 10, window(2), windowOut(won("task:1"), lost("task:1")))}, porcupine.Ok},
		{"a window with two winners on one key", []porcupine.Operation{
			allocOp(0, 0, 10, window(2), windowOut(won("task:1"), won("task:2")))}, porcupine.Illegal},
		{"a window's loser names another", []porcupine.Operation{
			allocOp(0, 0, 10, window(2), windowOut(won("task:1"), lost("task:9")))}, porcupine.Illegal},
		{"a window wins a held key", []porcupine.Operation{
			allocOp(0, 0, 10, create, won("task:1")), allocOp(1, 20, 30, window(1), windowOut(won("task:2")))}, porcupine.Illegal},
		{"a window on a held key loses to its holder", []porcupine.Operation{
			allocOp(0, 0, 10, create, won("task:1")), allocOp(1, 20, 30, window(2), windowOut(lost("task:1"), lost("task:1")))}, porcupine.Ok},
		{"a window with fewer answers than proposals", []porcupine.Operation{
			allocOp(0, 0, 10, window(2), windowOut(won("task:1")))}, porcupine.Illegal},
		{"an unknown window explains a loser", []porcupine.Operation{
			allocOp(0, 0, Pending, window(3), UnknownOutput{}), allocOp(1, 20, 30, create, lost("task:5"))}, porcupine.Ok},
		{"a window and a create race: the create first", []porcupine.Operation{
			allocOp(0, 0, 10, window(1), windowOut(lost("task:4"))), allocOp(1, 1, 9, create, won("task:4"))}, porcupine.Ok},
		{"an unknown reserve's loser names it", []porcupine.Operation{
			allocOp(0, 0, Pending, AllocInput{Kind: AllocReserve, Key: "k", Holder: "res:p"}, UnknownOutput{}),
			allocOp(1, 20, 30, create, lost("res:q"))}, porcupine.Illegal},
		{"a reservation that never expires keeps its key", []porcupine.Operation{
			allocOp(0, 0, 10, AllocInput{Kind: AllocReserve, Key: "k", Holder: "res:p"}, won("res:p")),
			allocOp(1, 20, 30, create, won("task:1"))}, porcupine.Illegal},
		{"an expiring reservation may lapse", []porcupine.Operation{
			allocOp(0, 0, 10, AllocInput{Kind: AllocReserve, Key: "k", Holder: "res:p", Expiring: true}, won("res:p")),
			allocOp(1, 20, 30, AllocInput{Kind: AllocCreate, Key: "k", Expiring: true}, lost("res:p")),
			allocOp(1, 40, 50, AllocInput{Kind: AllocCreate, Key: "k", Expiring: true}, won("task:1")),
			allocOp(0, 60, 70, AllocInput{Kind: AllocAbort, Key: "k", Holder: "res:p", Expiring: true}, won("")),
			allocOp(1, 80, 90, AllocInput{Kind: AllocCreate, Key: "k", Expiring: true}, lost("task:1"))}, porcupine.Ok},
		{"a lapsed reservation does not come back", []porcupine.Operation{
			allocOp(0, 0, 10, AllocInput{Kind: AllocReserve, Key: "k", Holder: "res:p", Expiring: true}, won("res:p")),
			allocOp(1, 40, 50, AllocInput{Kind: AllocWindow, Key: "k", Count: 1, Expiring: true}, windowOut(won("task:1"))),
			allocOp(1, 60, 70, AllocInput{Kind: AllocCreate, Key: "k", Expiring: true}, lost("res:p"))}, porcupine.Illegal},
	} {
		if got := checkBoth(t, AllocationModel(), tc.ops); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
