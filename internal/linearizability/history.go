package linearizability

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/errs"
)

// UnknownOutput is the output of a write whose outcome is unknown. Every
// model accepts it unconditionally, stepping as if the write was applied.
type UnknownOutput struct{}

// IsUnknown reports whether output is UnknownOutput. A model's Step calls
// it first.
func IsUnknown(output any) bool {
	_, ok := output.(UnknownOutput)
	return ok
}

// Pending is the return timestamp of an operation whose outcome is unknown:
// it may take effect at any point after its call, up to the end of the
// history and beyond (which stands for "never applied").
const Pending int64 = math.MaxInt64

type opState uint8

const (
	opPending  opState = iota // called, not yet resolved
	opReturned                // a decided output
	opUnknown                 // may or may not have taken effect
	opDropped                 // certainly had no effect; left out
)

type record struct {
	op    porcupine.Operation
	state opState
}

// History records concurrent operations for a linearizability check. It is
// safe for concurrent use. Timestamps are nanoseconds since NewHistory on
// the monotonic clock, so wall-clock jumps cannot reorder operations.
type History struct {
	start time.Time

	mu    sync.Mutex
	ops   []record
	notes []porcupine.Annotation
}

// NewHistory returns an empty history whose clock starts now.
func NewHistory() *History { return &History{start: time.Now()} }

// Rewrite replaces every recorded input and decided output with what f
// makes of them (an unknown output is passed as UnknownOutput and must be
// returned as is). A workload uses it to translate values only known once
// the run is over, such as opaque tokens into their order of issue.
func (h *History) Rewrite(f func(input, output any) (any, any)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.ops {
		r := &h.ops[i]
		if r.state == opDropped {
			continue
		}
		r.op.Input, r.op.Output = f(r.op.Input, r.op.Output)
	}
}

// Now is the history's current timestamp.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Op is one recorded call. Exactly one of Return, Unknown, Drop or Fail
// resolves it; an op left unresolved is treated as Unknown.
type Op struct {
	h   *History
	idx int
}

// Call records that client is about to invoke an operation with input.
// Take it immediately before the call, so the call time is not later than
// the moment the system could first act on it.
func (h *History) Call(client int, input any) *Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, record{op: porcupine.Operation{ClientId: client, Input: input, Call: h.Now()}})
	return &Op{h: h, idx: len(h.ops) - 1}
}

func (o *Op) resolve(state opState, output any, ret int64) {
	o.h.mu.Lock()
	defer o.h.mu.Unlock()
	r := &o.h.ops[o.idx]
	if r.state != opPending {
		panic(fmt.Sprintf("linearizability: operation %d resolved twice", o.idx))
	}
	r.state, r.op.Output, r.op.Return = state, output, ret
}

// Return records the decided output of the call.
func (o *Op) Return(output any) { o.resolve(opReturned, output, o.h.Now()) }

// Unknown records that the call may or may not have taken effect, now or
// at any later time: it stays pending until the end of the history with
// UnknownOutput.
func (o *Op) Unknown() { o.resolve(opUnknown, UnknownOutput{}, Pending) }

// Drop leaves the call out of the history. Use it only for a call that
// certainly had no effect on state: a failed read, or a write refused
// before it could be applied.
func (o *Op) Drop() { o.resolve(opDropped, nil, 0) }

// Fail resolves a call that failed with err, for errors the caller did not
// turn into a decided output (a domain failure such as not_found is an
// output, not a failure). write says whether the call could change state.
//
//   - A failed read is dropped: it changed nothing and nobody saw a result.
//   - A write failing with errs.Unavailable without OutcomeUnknown is
//     dropped: the cluster guarantees such a command never reached the log
//     (no leader, a refused enqueue, a dial that failed) and retries only
//     while that holds, so it will never be applied. A call with no effect
//     and no observed output is indistinguishable from one never made, so
//     leaving it out hides nothing. Were the guarantee broken, the command's
//     effect would be seen by later reads with no recorded write to explain
//     it, and the check would fail: dropping tests the claim.
//   - Any other failed write is kept as Unknown: an outcome-unknown error
//     says so, and for an unexpected code assuming "maybe applied" is the
//     only sound choice (it can make the check weaker, never wrong).
func (o *Op) Fail(err error, write bool) {
	if !write || CertainlyNotApplied(err) {
		o.Drop()
		return
	}
	o.Unknown()
}

// CertainlyNotApplied reports whether err says a write was not applied and
// never will be: errs.Unavailable without OutcomeUnknown.
func CertainlyNotApplied(err error) bool {
	return errors.Is(err, errs.Unavailable) && !errs.IsOutcomeUnknown(err)
}

// Mark adds a point-in-time annotation, such as a fault injected by the
// test, to the visualization under tag. It returns its timestamp.
func (h *History) Mark(tag, description string) int64 {
	now := h.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, porcupine.Annotation{Tag: tag, Start: now, Description: description})
	return now
}

// Counts summarizes a history.
type Counts struct {
	Returned, Unknown, Dropped, Pending int
}

// Counts returns how many operations were returned, unknown, dropped and
// still unresolved.
func (h *History) Counts() Counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	var c Counts
	for _, r := range h.ops {
		switch r.state {
		case opReturned:
			c.Returned++
		case opUnknown:
			c.Unknown++
		case opDropped:
			c.Dropped++
		default:
			c.Pending++
		}
	}
	return c
}

// Operations returns the history to check: returned and unknown operations,
// with every still unresolved one as Unknown.
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]porcupine.Operation, 0, len(h.ops))
	for _, r := range h.ops {
		switch r.state {
		case opDropped:
			continue
		case opPending:
			r.op.Output, r.op.Return = UnknownOutput{}, Pending
		}
		out = append(out, r.op)
	}
	return out
}

func (h *History) annotations() []porcupine.Annotation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Annotation(nil), h.notes...)
}

// Check checks h against model within timeout (which must be positive) and
// returns the result. Anything but porcupine.Ok fails t: Illegal, and also
// Unknown, since a check that ran out of time proved nothing. On failure
// porcupine's HTML visualization is written under os.TempDir (t.TempDir
// would be removed with the test) and its path is in the failure message.
func Check(t testing.TB, model porcupine.Model, h *History, timeout time.Duration) porcupine.CheckResult {
	t.Helper()
	if timeout <= 0 {
		t.Errorf("linearizability: Check needs a positive timeout, got %v", timeout)
		return porcupine.Unknown
	}
	ops := h.Operations()
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	took := time.Since(start).Round(time.Millisecond)
	if res == porcupine.Ok {
		t.Logf("linearizability: %d operations are linearizable (checked in %v)", len(ops), took)
		return res
	}
	info.AddAnnotations(h.annotations())
	path, err := visualize(t.Name(), model, info)
	where := "visualization: " + path
	if err != nil {
		where = fmt.Sprintf("no visualization: %v", err)
	}
	if res == porcupine.Illegal {
		t.Errorf("linearizability: history of %d operations is NOT linearizable (checked in %v); %s", len(ops), took, where)
	} else {
		t.Errorf("linearizability: check of %d operations gave %s: no answer within %v, which is a failure, not a pass; %s", len(ops), res, timeout, where)
	}
	return res
}

// VisualizationDirEnv names the environment variable that, when set,
// is the directory visualize writes into instead of os.TempDir: tests
// that fail a history on purpose point it at their own t.TempDir, so
// their pages do not pile up in /tmp run after run.
const VisualizationDirEnv = "ARBITER_PORCUPINE_DIR"

// visualize writes porcupine's HTML for info to a new file under
// $ARBITER_PORCUPINE_DIR or os.TempDir, named after the test and the
// time, and returns its path.
func visualize(testName string, model porcupine.Model, info porcupine.LinearizationInfo) (string, error) {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, testName)
	f, err := os.CreateTemp(os.Getenv(VisualizationDirEnv), fmt.Sprintf("arbiter-porcupine-%s-%s-*.html", name, time.Now().Format("20060102T150405")))
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := porcupine.Visualize(model, info, f); err != nil {
		return f.Name(), err
	}
	return f.Name(), f.Close()
}

// PartitionBy returns the Partition and PartitionEvent functions of a model
// whose operations on different keys are independent (a history is then
// linearizable if and only if each key's sub-history is). key maps an
// operation's input to its key. Partitions come in order of first
// appearance, so a check is reproducible.
func PartitionBy(key func(input any) string) (func([]porcupine.Operation) [][]porcupine.Operation, func([]porcupine.Event) [][]porcupine.Event) {
	ops := func(history []porcupine.Operation) [][]porcupine.Operation {
		index := map[string]int{}
		var out [][]porcupine.Operation
		for _, op := range history {
			k := key(op.Input)
			i, ok := index[k]
			if !ok {
				i = len(out)
				index[k] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], op)
		}
		return out
	}
	events := func(history []porcupine.Event) [][]porcupine.Event {
		index := map[string]int{}
		partOf := map[int]int{} // event id -> partition, from its call event
		var out [][]porcupine.Event
		for _, ev := range history {
			var i int
			if ev.Kind == porcupine.CallEvent {
				k := key(ev.Value)
				var ok bool
				if i, ok = index[k]; !ok {
					i = len(out)
					index[k] = i
					out = append(out, nil)
				}
				partOf[ev.Id] = i
			} else {
				var ok bool
				if i, ok = partOf[ev.Id]; !ok {
					panic(fmt.Sprintf("linearizability: return event %d comes before its call", ev.Id))
				}
			}
			out[i] = append(out[i], ev)
		}
		return out
	}
	return ops, events
}
