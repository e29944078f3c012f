package clustertest

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/internal/linearizability"
)

// History records concurrent calls of a program's own operations for a
// linearizability check. It is safe for concurrent use; its clock is
// monotonic, from NewHistory.
type History struct{ h *linearizability.History }

// NewHistory returns an empty history whose clock starts now.
func NewHistory() *History { return &History{h: linearizability.NewHistory()} }

// Op is one recorded call. Exactly one of Return, Unknown, Drop or Fail
// resolves it; one left unresolved counts as Unknown.
type Op struct{ op *linearizability.Op }

// Call records that client is about to call an operation with input.
// Call it immediately before the call. Inputs and outputs are whatever
// the model's Step takes: plain comparable structs are easiest to read in
// a failure's visualization.
func (h *History) Call(client int, input any) *Op { return &Op{op: h.h.Call(client, input)} }

// Return records the call's decided output, a refusal that is an answer
// (not found, already held) included.
func (o *Op) Return(output any) { o.op.Return(output) }

// Unknown records that the call may or may not have taken effect, now or
// later: it stays pending to the end of the history with UnknownOutput.
func (o *Op) Unknown() { o.op.Unknown() }

// Drop leaves the call out: only for a call that certainly had no effect.
func (o *Op) Drop() { o.op.Drop() }

// Fail resolves a call that failed with err; write says whether it could
// change state. A failed read, and a write that certainly was not applied
// (errs.Unavailable without errs.IsOutcomeUnknown), are dropped; any other
// failed write is Unknown.
func (o *Op) Fail(err error, write bool) { o.op.Fail(err, write) }

// Mark annotates the history's visualization with a fault at this moment.
func (h *History) Mark(tag, description string) { h.h.Mark(tag, description) }

// Operations is the history to check: decided and unknown calls.
func (h *History) Operations() []porcupine.Operation { return h.h.Operations() }

// UnknownOutput is the output of a call whose outcome is unknown. A model
// accepts it unconditionally and steps as if the write was applied
// (linearized last, it stands for "never applied").
type UnknownOutput = linearizability.UnknownOutput

// IsUnknown reports whether output is UnknownOutput; a model's Step
// checks it first.
func IsUnknown(output any) bool { return linearizability.IsUnknown(output) }

// Check checks h against model within timeout and fails t unless the
// answer is porcupine.Ok (a check that ran out of time proves nothing);
// on failure it writes porcupine's HTML visualization to a file under
// os.TempDir and names it.
func Check(t testing.TB, model porcupine.Model, h *History, timeout time.Duration) porcupine.CheckResult {
	t.Helper()
	return linearizability.Check(t, model, h.h, timeout)
}

// CheckOperations is Check without a test: the answer alone.
func CheckOperations(model porcupine.Model, h *History, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(model, h.Operations(), timeout)
}

// PartitionBy gives a model the Partition and PartitionEvent functions
// for operations on independent keys (key maps an input to its key),
// which makes the check of a long history fast.
func PartitionBy(key func(input any) string) (func([]porcupine.Operation) [][]porcupine.Operation, func([]porcupine.Event) [][]porcupine.Event) {
	return linearizability.PartitionBy(key)
}
