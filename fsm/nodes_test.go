package fsm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

func newNodes(t *testing.T) (*fsmtest.Local, *fsm.Nodes) {
	t.Helper()
	l, err := fsmtest.New()
	if err != nil {
		t.Fatal(err)
	}
	return l, fsm.NewNodes(l, l)
}

func TestCreateIfAbsentFirstWriterWins(t *testing.T) {
	ctx := context.Background()
	_, nodes := newNodes(t)
	first, err := nodes.CreateIfAbsent(ctx, fsm.CreateNodeRequest{NodeID: "a", Labels: []string{"x"}, Properties: map[string]any{"owner": "p1", "n": 1.50}})
	if err != nil || !first.Created {
		t.Fatalf("first create: %+v, %v", first, err)
	}
	second, err := nodes.CreateIfAbsent(ctx, fsm.CreateNodeRequest{NodeID: "a", Properties: map[string]any{"owner": "p2"}})
	if err != nil || second.Created {
		t.Fatalf("second create: %+v, %v", second, err)
	}
	if got := string(second.Node.Properties["owner"]); got != `"p1"` {
		t.Fatalf("second create saw owner %s, want the first writer's", got)
	}
	if got := string(second.Node.Properties["n"]); got != `1.5` {
		t.Fatalf("n = %s, want canonical 1.5", got)
	}
	if second.Node.Version != 1 || second.Node.CreatedIndex != 1 || second.Node.ModifiedIndex != 1 {
		t.Fatalf("bookkeeping: %+v", second.Node)
	}
}

func TestCompareAndSet(t *testing.T) {
	ctx := context.Background()
	_, nodes := newNodes(t)
	if _, err := nodes.CompareAndSet(ctx, fsm.CASRequest{NodeID: "missing", Updates: map[string]any{"a": 1}}); !errors.Is(err, errs.NotFound) {
		t.Fatalf("CAS on missing node: %v", err)
	}
	if _, err := nodes.CreateIfAbsent(ctx, fsm.CreateNodeRequest{NodeID: "n", Properties: map[string]any{"state": "reserved", "fence": 1}}); err != nil {
		t.Fatal(err)
	}
	lost, err := nodes.CompareAndSet(ctx, fsm.CASRequest{NodeID: "n", Conditions: map[string]any{"fence": 2}, Updates: map[string]any{"state": "x"}})
	if err != nil || lost.Swapped || lost.Node.Version != 1 {
		t.Fatalf("stale CAS: %+v, %v", lost, err)
	}
	won, err := nodes.CompareAndSet(ctx, fsm.CASRequest{NodeID: "n",
		Conditions: map[string]any{"fence": 1.0, "state": "reserved", "owner": nil},
		Updates:    map[string]any{"fence": 2, "state": nil, "owner": "me"}})
	if err != nil || !won.Swapped {
		t.Fatalf("CAS: %+v, %v", won, err)
	}
	want := map[string]json.RawMessage{"fence": json.RawMessage("2"), "owner": json.RawMessage(`"me"`)}
	if len(won.Node.Properties) != 2 || string(won.Node.Properties["fence"]) != "2" || string(won.Node.Properties["owner"]) != `"me"` {
		t.Fatalf("properties %v, want %v", won.Node.Properties, want)
	}
	if won.Node.Version != 2 || won.Node.ModifiedIndex != 4 {
		t.Fatalf("bookkeeping after CAS: %+v", won.Node)
	}
}

func TestIdempotentReplayAndConflict(t *testing.T) {
	ctx := context.Background()
	_, nodes := newNodes(t)
	req := fsm.CreateNodeRequest{NodeID: "k", IdempotencyKey: "key-1"}
	a, err := nodes.CreateIfAbsent(ctx, req)
	if err != nil || !a.Created || a.Replayed {
		t.Fatalf("first: %+v %v", a, err)
	}
	b, err := nodes.CreateIfAbsent(ctx, req)
	if err != nil || !b.Created || !b.Replayed {
		t.Fatalf("replay: %+v %v", b, err)
	}
	req.NodeID = "other"
	if _, err := nodes.CreateIfAbsent(ctx, req); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("reuse with another request: %v", err)
	}
}

func TestLabelPaging(t *testing.T) {
	ctx := context.Background()
	_, nodes := newNodes(t)
	for _, id := range []string{"c", "a", "e", "b", "d"} {
		if _, err := nodes.CreateIfAbsent(ctx, fsm.CreateNodeRequest{NodeID: id, Labels: []string{"L"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nodes.CreateIfAbsent(ctx, fsm.CreateNodeRequest{NodeID: "z", Labels: []string{"M"}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, err := nodes.ByLabel(ctx, fsm.LabelQuery{Label: "L", After: cursor, Limit: 2}, fsm.Linearizable)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Nodes {
			got = append(got, n.NodeID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if want := "abcde"; joined(got) != want {
		t.Fatalf("paged %v, want %s", got, want)
	}
	for _, bad := range []string{"garbage", "n1.AAAA", cursor + "x"} {
		if _, err := nodes.ByLabel(ctx, fsm.LabelQuery{Label: "L", After: bad}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
			t.Errorf("cursor %q accepted: %v", bad, err)
		}
	}
	if _, err := nodes.ByLabel(ctx, fsm.LabelQuery{Label: "M", After: cursor}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
		t.Errorf("cursor of another label accepted: %v", err)
	}
	if _, err := nodes.ByLabel(ctx, fsm.LabelQuery{Label: "L", Limit: 129}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
		t.Errorf("limit 129 accepted: %v", err)
	}
}

func joined(s []string) string {
	out := ""
	for _, x := range s {
		out += x
	}
	return out
}

// A CAS can move a node between labels; the label index follows.
func TestCASLabelEdits(t *testing.T) {
	ctx := context.Background()
	_, nodes := newNodes(t)
	if _, err := nodes.CreateIfAbsent(ctx, fsm.CreateNodeRequest{NodeID: "n", Labels: []string{"a", "keep"}}); err != nil {
		t.Fatal(err)
	}
	res, err := nodes.CompareAndSet(ctx, fsm.CASRequest{NodeID: "n", LabelEdits: fsm.LabelEdits{AddLabels: []string{"b"}, RemoveLabels: []string{"a", "absent"}}})
	if err != nil || !res.Swapped || joined(res.Node.Labels) != "bkeep" || res.Node.Version != 2 {
		t.Fatalf("label edit: %+v %v", res, err)
	}
	count := func(label string) int {
		page, err := nodes.ByLabel(ctx, fsm.LabelQuery{Label: label}, fsm.Linearizable)
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Nodes)
	}
	if count("a") != 0 || count("b") != 1 || count("keep") != 1 {
		t.Fatalf("label index: a=%d b=%d keep=%d", count("a"), count("b"), count("keep"))
	}
	if _, err := nodes.CompareAndSet(ctx, fsm.CASRequest{NodeID: "n", LabelEdits: fsm.LabelEdits{AddLabels: []string{"x"}, RemoveLabels: []string{"x"}}}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("add and remove of one label accepted: %v", err)
	}
	many := make([]string, fsm.MaxLabels)
	for i := range many {
		many[i] = fmt.Sprintf("l%02d", i)
	}
	if _, err := nodes.CompareAndSet(ctx, fsm.CASRequest{NodeID: "n", LabelEdits: fsm.LabelEdits{AddLabels: many}}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("a node with more than %d labels: %v", fsm.MaxLabels, err)
	}
}
