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
	} {
		if got := checkBoth(t, AllocationModel(), tc.ops); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
