package linearizability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/errs"
)

// Hand-written histories: op builds one operation with explicit times.
func op(client int, call, ret int64, in NodeInput, out any) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func create(id, owner string) NodeInput {
	return NodeInput{Kind: NodeCreate, ID: id, Owner: owner, Fence: 1}
}

func cas(id string, expect uint64, owner string) NodeInput {
	return NodeInput{Kind: NodeCAS, ID: id, Expect: expect, Fence: expect + 1, Owner: owner}
}

func get(id string) NodeInput { return NodeInput{Kind: NodeGet, ID: id} }

func node(owner string, fence, version uint64) NodeOutput {
	return NodeOutput{Owner: owner, Fence: fence, Version: version}
}

func created(owner string) NodeOutput {
	return NodeOutput{Created: true, Owner: owner, Fence: 1, Version: 1}
}

func swapped(owner string, fence, version uint64) NodeOutput {
	return NodeOutput{Swapped: true, Owner: owner, Fence: fence, Version: version}
}

var (
	notFound = NodeOutput{NotFound: true}
	unknown  = UnknownOutput{}
)

func checkModel(t *testing.T, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return checkBoth(t, NodesModel(), ops)
}

func TestNodesModelAcceptsLinearizableHistory(t *testing.T) {
	ops := []porcupine.Operation{
		// Two overlapping creates of a: c0 wins, c1 sees c0's node.
		op(0, 0, 10, create("a", "c0"), created("c0")),
		op(1, 2, 12, create("a", "c1"), node("c0", 1, 1)),
		// A get overlapping both may see the node absent.
		op(2, 1, 3, get("a"), notFound),
		// c1 swaps 1 -> 2; a concurrent stale CAS from 1 fails and sees
		// either node; a concurrent get sees the old node.
		op(1, 20, 30, cas("a", 1, "c1"), swapped("c1", 2, 2)),
		op(0, 21, 31, cas("a", 1, "c0"), NodeOutput{Owner: "c1", Fence: 2, Version: 2}),
		op(2, 22, 29, get("a"), node("c0", 1, 1)),
		// After both, reads see the swap.
		op(2, 40, 41, get("a"), node("c1", 2, 2)),
		op(0, 42, 43, cas("a", 2, "c0"), swapped("c0", 3, 3)),
		op(1, 44, 45, get("a"), node("c0", 3, 3)),
		// Another id is independent: a CAS on an absent node finds nothing.
		op(3, 0, 5, cas("b", 1, "c3"), notFound),
		op(3, 6, 7, get("b"), notFound),
		op(3, 8, 9, create("b", "c3"), created("c3")),
		op(3, 10, 11, get("b"), node("c3", 1, 1)),
	}
	if res := checkModel(t, ops); res != porcupine.Ok {
		t.Fatalf("linearizable history: got %s, want Ok", res)
	}
}

func TestNodesModelRejectsNonLinearizableHistories(t *testing.T) {
	cases := []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"two creates both created", []porcupine.Operation{
			op(0, 0, 10, create("a", "c0"), created("c0")),
			op(1, 1, 11, create("a", "c1"), created("c1")),
		}},
		{"a loser that saw itself", []porcupine.Operation{
			op(0, 0, 10, create("a", "c0"), created("c0")),
			op(1, 1, 11, create("a", "c1"), node("c1", 1, 1)),
		}},
		{"read of a value before it was written", []porcupine.Operation{
			op(0, 0, 10, get("a"), node("c1", 1, 1)),
			op(1, 20, 30, create("a", "c1"), created("c1")),
		}},
		{"stale read after an acknowledged CAS", []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(0, 2, 3, cas("a", 1, "c1"), swapped("c1", 2, 2)),
			op(1, 4, 5, get("a"), node("c0", 1, 1)),
		}},
		{"not found after the create returned", []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, 3, get("a"), notFound),
		}},
		{"two CAS from the same fence both swapped", []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, 10, cas("a", 1, "c1"), swapped("c1", 2, 2)),
			op(2, 3, 11, cas("a", 1, "c2"), swapped("c2", 2, 2)),
		}},
		{"a CAS whose condition held reported not swapped", []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, 3, cas("a", 1, "c1"), node("c0", 1, 1)),
		}},
		{"a version that did not advance", []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, 3, cas("a", 1, "c1"), swapped("c1", 2, 1)),
		}},
		{"a read that goes back in time", []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, 20, cas("a", 1, "c1"), swapped("c1", 2, 2)),
			op(2, 3, 4, get("a"), node("c1", 2, 2)),
			op(2, 5, 6, get("a"), node("c0", 1, 1)),
		}},
		{"a violation on one id next to a clean id", []porcupine.Operation{
			op(3, 0, 1, create("b", "c3"), created("c3")),
			op(3, 2, 3, get("b"), node("c3", 1, 1)),
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, 3, get("a"), notFound),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkModel(t, tc.ops); res != porcupine.Illegal {
				t.Fatalf("got %s, want Illegal", res)
			}
		})
	}
}

func TestNodesModelUnknownOutcomes(t *testing.T) {
	cases := []struct {
		name string
		want porcupine.CheckResult
		ops  []porcupine.Operation
	}{
		{"unknown create that applied", porcupine.Ok, []porcupine.Operation{
			op(0, 0, Pending, create("a", "c0"), unknown),
			op(1, 10, 20, get("a"), node("c0", 1, 1)),
			op(1, 30, 40, create("a", "c1"), node("c0", 1, 1)),
		}},
		{"unknown create that did not apply", porcupine.Ok, []porcupine.Operation{
			op(0, 0, Pending, create("a", "c0"), unknown),
			op(1, 10, 20, get("a"), notFound),
			op(1, 30, 40, create("a", "c1"), created("c1")),
			op(1, 50, 60, get("a"), node("c1", 1, 1)),
		}},
		{"unknown create applied late, after a read saw nothing", porcupine.Ok, []porcupine.Operation{
			op(0, 0, Pending, create("a", "c0"), unknown),
			op(1, 10, 20, get("a"), notFound),
			op(1, 30, 40, get("a"), node("c0", 1, 1)),
		}},
		{"unknown CAS that applied", porcupine.Ok, []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, Pending, cas("a", 1, "c1"), unknown),
			op(2, 10, 11, get("a"), node("c1", 2, 2)),
		}},
		{"unknown CAS that did not apply", porcupine.Ok, []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, Pending, cas("a", 1, "c1"), unknown),
			op(2, 10, 11, cas("a", 1, "c2"), swapped("c2", 2, 2)),
			op(2, 12, 13, get("a"), node("c2", 2, 2)),
		}},
		{"unknown create cannot explain another owner", porcupine.Illegal, []porcupine.Operation{
			op(0, 0, Pending, create("a", "c0"), unknown),
			op(1, 10, 20, get("a"), node("c9", 1, 1)),
		}},
		{"unknown create cannot act before its call", porcupine.Illegal, []porcupine.Operation{
			op(1, 0, 5, get("a"), node("c0", 1, 1)),
			op(0, 10, Pending, create("a", "c0"), unknown),
		}},
		{"unknown create cannot be undone", porcupine.Illegal, []porcupine.Operation{
			op(0, 0, Pending, create("a", "c0"), unknown),
			op(1, 10, 20, get("a"), node("c0", 1, 1)),
			op(1, 30, 40, get("a"), notFound),
		}},
		{"unknown CAS cannot apply twice", porcupine.Illegal, []porcupine.Operation{
			op(0, 0, 1, create("a", "c0"), created("c0")),
			op(1, 2, Pending, cas("a", 1, "c1"), unknown),
			op(2, 10, 11, get("a"), node("c1", 2, 2)),
			op(2, 12, 13, cas("a", 2, "c2"), swapped("c2", 3, 3)),
			op(2, 14, 15, get("a"), node("c1", 2, 2)),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkModel(t, tc.ops); res != tc.want {
				t.Fatalf("got %s, want %s", res, tc.want)
			}
		})
	}
}

func TestNodesModelDescriptions(t *testing.T) {
	m := NodesModel()
	for _, tc := range []struct {
		in   NodeInput
		out  any
		want string
	}{
		{create("a", "c0"), created("c0"), "create(a, fence 1, owner c0) -> created {fence 1, owner c0, v1}"},
		{create("a", "c1"), node("c0", 1, 1), "create(a, fence 1, owner c1) -> exists {fence 1, owner c0, v1}"},
		{cas("a", 1, "c1"), swapped("c1", 2, 2), "cas(a, fence 1 -> 2, owner c1) -> swapped {fence 2, owner c1, v2}"},
		{cas("a", 1, "c1"), node("c0", 3, 3), "cas(a, fence 1 -> 2, owner c1) -> not swapped {fence 3, owner c0, v3}"},
		{cas("a", 1, "c1"), unknown, "cas(a, fence 1 -> 2, owner c1) -> ? (outcome unknown)"},
		{get("a"), notFound, "get(a) -> not found"},
	} {
		if got := m.DescribeOperation(tc.in, tc.out); got != tc.want {
			t.Errorf("DescribeOperation = %q, want %q", got, tc.want)
		}
	}
	if got := m.DescribeState(m.Init()); got != "absent" {
		t.Errorf("DescribeState(init) = %q", got)
	}
}

// The history recorder and Check. (They would sit in history_test.go; this
// change was asked to add only this test file.)

func TestHistoryRecordsOutcomes(t *testing.T) {
	h := NewHistory()
	ret := h.Call(0, get("a"))
	ret.Return(notFound)
	h.Call(1, get("a")).Fail(errs.New(errs.CodeUnavailable, "no leader"), false)
	h.Call(1, get("a")).Fail(errs.Unknown("timeout"), false)
	h.Call(2, create("a", "c2")).Fail(errs.New(errs.CodeUnavailable, "not applied"), true)
	h.Call(3, create("a", "c3")).Fail(fmt.Errorf("wrapped: %w", errs.Unknown("leadership lost")), true)
	h.Call(4, cas("a", 1, "c4")).Fail(errs.New(errs.CodeInternal, "decode result"), true)
	h.Call(5, cas("a", 1, "c5")) // never resolved
	h.Mark("cluster", "stop leader")

	if got, want := h.Counts(), (Counts{Returned: 1, Unknown: 2, Dropped: 3, Pending: 1}); got != want {
		t.Fatalf("Counts = %+v, want %+v", got, want)
	}
	ops := h.Operations()
	clients := []int{}
	for _, o := range ops {
		clients = append(clients, o.ClientId)
	}
	if fmt.Sprint(clients) != "[0 3 4 5]" {
		t.Fatalf("kept operations of clients %v, want [0 3 4 5]", clients)
	}
	if ops[0].Call > ops[0].Return || ops[0].Return == Pending || ops[0].Output != notFound {
		t.Errorf("returned op = %+v", ops[0])
	}
	for _, o := range ops[1:] {
		if o.Return != Pending || !IsUnknown(o.Output) {
			t.Errorf("client %d: Return %d, Output %#v; want pending with UnknownOutput", o.ClientId, o.Return, o.Output)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("resolving an op twice did not panic")
		}
	}()
	ret.Drop()
}

func TestCertainlyNotApplied(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errs.New(errs.CodeUnavailable, "no leader"), true},
		{fmt.Errorf("x: %w", errs.New(errs.CodeUnavailable, "no leader")), true},
		{errs.Unknown("timeout"), false},
		{errs.New(errs.CodeBackpressure, "busy"), false}, // not claimed; kept as unknown
		{context.DeadlineExceeded, false},
		{errors.New("plain"), false},
	} {
		if got := CertainlyNotApplied(tc.err); got != tc.want {
			t.Errorf("CertainlyNotApplied(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// recordingTB captures failures so tests can check that Check fails.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Logf(string, ...any) {}

func TestCheckPassesLinearizableHistory(t *testing.T) {
	h := NewHistory()
	h.Call(0, create("a", "c0")).Return(created("c0"))
	h.Call(1, get("a")).Return(node("c0", 1, 1))
	rec := &recordingTB{TB: t}
	if res := Check(rec, NodesModel(), h, 5*time.Second); res != porcupine.Ok || len(rec.errors) > 0 {
		t.Fatalf("Check = %s, errors %q", res, rec.errors)
	}
}

func TestCheckFailsIllegalAndWritesVisualization(t *testing.T) {
	h := NewHistory()
	h.Call(0, create("a", "c0")).Return(created("c0"))
	h.Mark("test", "nothing happened")
	h.Call(1, get("a")).Return(notFound)
	rec := &recordingTB{TB: t}
	if res := Check(rec, NodesModel(), h, 5*time.Second); res != porcupine.Illegal {
		t.Fatalf("Check = %s, want Illegal", res)
	}
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "NOT linearizable") {
		t.Fatalf("errors = %q, want one saying NOT linearizable", rec.errors)
	}
	path := visualizationPath(t, rec.errors[0])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The data is JSON inside the page, where ">" is escaped.
	if !strings.Contains(string(b), "get(a) -\\u003e not found") || !strings.Contains(string(b), "nothing happened") {
		t.Errorf("%s does not describe the operations", path)
	}
}

func TestCheckFailsOnTimeout(t *testing.T) {
	// A model that cannot finish: every step waits for the timeout.
	m := porcupine.Model{
		Init: func() any { return 0 },
		StepContext: func(ctx context.Context, state, input, output any) (bool, any) {
			<-ctx.Done()
			return false, state
		},
	}
	h := NewHistory()
	h.Call(0, 1).Return(1)
	rec := &recordingTB{TB: t}
	if res := Check(rec, m, h, 20*time.Millisecond); res != porcupine.Unknown {
		t.Fatalf("Check = %s, want Unknown", res)
	}
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "not a pass") {
		t.Fatalf("errors = %q, want one failure for the timeout", rec.errors)
	}
	visualizationPath(t, rec.errors[0])
}

// visualizationPath extracts the HTML path from a Check failure, checks the
// file's name, and removes it when the test ends.
func visualizationPath(t *testing.T, msg string) string {
	t.Helper()
	_, path, ok := strings.Cut(msg, "visualization: ")
	if !ok {
		t.Fatalf("no visualization path in %q", msg)
	}
	t.Cleanup(func() { os.Remove(path) })
	if !strings.HasPrefix(path, os.TempDir()) || !strings.Contains(path, "arbiter-porcupine-"+strings.ReplaceAll(t.Name(), "/", "_")) || !strings.HasSuffix(path, ".html") {
		t.Errorf("visualization path %q is not os.TempDir()/arbiter-porcupine-<test>-<time>.html", path)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Errorf("visualization %s: %v", path, err)
	}
	return path
}
