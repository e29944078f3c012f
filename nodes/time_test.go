package nodes_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
)

func intProp(t *testing.T, n nodes.Record, k string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(string(n.Properties[k]), 10, 64)
	if err != nil {
		t.Fatalf("property %s = %s is not an integer", k, n.Properties[k])
	}
	return v
}

// Timestamps and deadlines come from the log's clock: set_now writes FSM
// time (plus an offset), due/not_due compare against FSM time when the CAS
// applies, whatever the caller's clock says.
func TestTimeFieldsUseFSMTime(t *testing.T) {
	ctx := context.Background()
	l, nc := newNodes(t)
	created, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "lease",
		Properties: map[string]any{"state": "held"}, SetNow: map[string]int64{"created_ms": 0, "expires_ms": 30_000}})
	if err != nil {
		t.Fatal(err)
	}
	if got := intProp(t, created.Node, "created_ms"); got != fsmtest.Epoch {
		t.Fatalf("created_ms = %d, want FSM time %d", got, fsmtest.Epoch)
	}
	if got := intProp(t, created.Node, "expires_ms"); got != fsmtest.Epoch+30_000 {
		t.Fatalf("expires_ms = %d, want %d", got, fsmtest.Epoch+30_000)
	}
	expire := nodes.CASRequest{NodeID: "lease", Conditions: map[string]any{"state": "held"},
		Updates: map[string]any{"state": "expired"}, TimeFields: nodes.TimeFields{Due: []string{"expires_ms"}, SetNow: map[string]int64{"expired_ms": 0}}}
	renew := nodes.CASRequest{NodeID: "lease", Conditions: map[string]any{"state": "held"},
		TimeFields: nodes.TimeFields{NotDue: []string{"expires_ms"}, SetNow: map[string]int64{"expires_ms": 30_000}}}

	l.Advance(29_999 * time.Millisecond)
	if res, err := nc.CompareAndSet(ctx, expire); err != nil || res.Swapped {
		t.Fatalf("expired 1 ms early: %+v %v", res, err)
	}
	res, err := nc.CompareAndSet(ctx, renew)
	if err != nil || !res.Swapped || intProp(t, res.Node, "expires_ms") != fsmtest.Epoch+29_999+30_000 {
		t.Fatalf("renew before the deadline: %+v %v", res, err)
	}
	// A proposer whose clock runs behind cannot move FSM time back.
	l.SetClock(fsmtest.Epoch)
	if res, err := nc.CompareAndSet(ctx, expire); err != nil || res.Swapped {
		t.Fatalf("expired by a clock that went back: %+v %v", res, err)
	}
	l.SetClock(fsmtest.Epoch + 29_999 + 30_000)
	if res, err := nc.CompareAndSet(ctx, renew); err != nil || res.Swapped {
		t.Fatalf("renewed at the deadline: %+v %v", res, err)
	}
	res, err = nc.CompareAndSet(ctx, expire)
	if err != nil || !res.Swapped || string(res.Node.Properties["state"]) != `"expired"` {
		t.Fatalf("expire at the deadline: %+v %v", res, err)
	}
	if intProp(t, res.Node, "expired_ms") != fsmtest.Epoch+29_999+30_000 {
		t.Fatalf("expired_ms = %s", res.Node.Properties["expired_ms"])
	}
}

func TestTimeFieldsValidation(t *testing.T) {
	ctx := context.Background()
	_, nc := newNodes(t)
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "n", Properties: map[string]any{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	bad := []nodes.CASRequest{
		{NodeID: "n", TimeFields: nodes.TimeFields{SetNow: map[string]int64{"t": -1}}},
		{NodeID: "n", TimeFields: nodes.TimeFields{SetNow: map[string]int64{"t": nodes.MaxNowOffsetMs + 1}}},
		{NodeID: "n", Updates: map[string]any{"t": 1}, TimeFields: nodes.TimeFields{SetNow: map[string]int64{"t": 0}}},
		{NodeID: "n", Updates: map[string]any{"a": 2}, TimeFields: nodes.TimeFields{Due: []string{""}}},
		{NodeID: "n", Updates: map[string]any{"a": 2}, TimeFields: nodes.TimeFields{NotDue: []string{"x\n"}}},
	}
	for i, req := range bad {
		if _, err := nc.CompareAndSet(ctx, req); !errors.Is(err, errs.Invalid) {
			t.Errorf("case %d accepted: %v", i, err)
		}
	}
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "m", SetNow: map[string]int64{"t": -5}}); !errors.Is(err, errs.Invalid) {
		t.Errorf("negative create offset accepted: %v", err)
	}
	// A due condition on a missing or non-integer field does not hold.
	res, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n", Updates: map[string]any{"a": 3}, TimeFields: nodes.TimeFields{Due: []string{"missing"}}})
	if err != nil || res.Swapped {
		t.Fatalf("due on a missing field: %+v %v", res, err)
	}
}

func TestCASCommandTimeFieldsRoundTrip(t *testing.T) {
	in := nodes.CASCommand{NodeID: "n", TimeFields: nodes.TimeFields{SetNow: map[string]int64{"a": 5}, Due: []string{"b"}, NotDue: []string{"c"}}}
	var out nodes.CASCommand
	if err := log.Unmarshal(log.MustMarshal(in), &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Fatalf("round trip:\n%s", diff)
	}
}

// A CAS that does not swap names every check that failed, with FSM time
// for the deadlines; a keyed retry of it names the same, as decided then.
func TestCASNamesWhatFailed(t *testing.T) {
	ctx := context.Background()
	l, nc := newNodes(t)
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "n",
		Properties: map[string]any{"fence": 2, "owner": "a", "note": "x"}, SetNow: map[string]int64{"expires_ms": 1000}}); err != nil {
		t.Fatal(err)
	}
	now := fsmtest.Epoch
	req := nodes.CASRequest{NodeID: "n",
		Conditions:     map[string]any{"owner": "a", "fence": 1, "state": "held", "note": nil},
		Updates:        map[string]any{"fence": 3},
		TimeFields:     nodes.TimeFields{Due: []string{"expires_ms", "owner", "gone"}, NotDue: []string{"expires_ms"}},
		IdempotencyKey: "k"}
	res, err := nc.CompareAndSet(ctx, req)
	if err != nil || res.Swapped {
		t.Fatalf("%+v %v", res, err)
	}
	want := []nodes.Failure{
		{Field: "fence", Check: "equal", Reason: "different"},
		{Field: "note", Check: "absent", Reason: "present"},
		{Field: "state", Check: "equal", Reason: "missing"},
		{Field: "expires_ms", Check: "due", Reason: "not_yet_due", NowMs: now},
		{Field: "owner", Check: "due", Reason: "not_integer", NowMs: now},
		{Field: "gone", Check: "due", Reason: "missing", NowMs: now},
	}
	if diff := cmp.Diff(want, res.Failed); diff != "" {
		t.Fatalf("failed (-want +got):\n%s", diff)
	}
	// Later, the retry replays the decision and its reasons.
	l.Advance(5 * time.Second)
	again, err := nc.CompareAndSet(ctx, req)
	if err != nil || !again.Replayed || again.Swapped {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if diff := cmp.Diff(want, again.Failed); diff != "" {
		t.Fatalf("replayed failed (-want +got):\n%s", diff)
	}
	// Past the deadline, not_due fails the other way.
	res, err = nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n", Conditions: map[string]any{"fence": 2},
		Updates: map[string]any{"fence": 3}, TimeFields: nodes.TimeFields{NotDue: []string{"expires_ms"}}})
	if err != nil || res.Swapped {
		t.Fatalf("%+v %v", res, err)
	}
	if diff := cmp.Diff([]nodes.Failure{{Field: "expires_ms", Check: "not_due", Reason: "already_due", NowMs: now + 5000}}, res.Failed); diff != "" {
		t.Fatalf("not_due (-want +got):\n%s", diff)
	}
	// A swap names nothing.
	res, err = nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n", Conditions: map[string]any{"fence": 2}, Updates: map[string]any{"fence": 3}})
	if err != nil || !res.Swapped || res.Failed != nil {
		t.Fatalf("swap: %+v %v", res, err)
	}
}
