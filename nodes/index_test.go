package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
)

// set_index writes the log index of the entry that applies the command:
// on a create, the node's created index; on a CAS, its new modified index.
func TestSetIndexWritesTheEntrysIndex(t *testing.T) {
	ctx := context.Background()
	_, nc := newNodes(t)
	created, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "claim",
		Properties: map[string]any{"state": "held"}, IndexFields: nodes.IndexFields{SetIndex: []string{"fence"}}})
	if err != nil || !created.Created {
		t.Fatalf("create: %+v %v", created, err)
	}
	if got := intProp(t, created.Node, "fence"); uint64(got) != created.Node.CreatedIndex {
		t.Fatalf("fence = %d, want the created index %d", got, created.Node.CreatedIndex)
	}
	for range 3 { // other entries in between: the index is the entry's, not a count
		if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "other-" + t.Name(), Properties: map[string]any{"x": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	moved, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "claim",
		Conditions: map[string]any{"fence": intProp(t, created.Node, "fence")}, Updates: map[string]any{"state": "moved"},
		IndexFields: nodes.IndexFields{SetIndex: []string{"fence", "moved_at_index"}}})
	if err != nil || !moved.Swapped {
		t.Fatalf("cas: %+v %v", moved, err)
	}
	for _, f := range []string{"fence", "moved_at_index"} {
		if got := intProp(t, moved.Node, f); uint64(got) != moved.Node.ModifiedIndex {
			t.Fatalf("%s = %d, want the modified index %d", f, got, moved.Node.ModifiedIndex)
		}
	}
	if moved.Node.ModifiedIndex <= created.Node.CreatedIndex+1 {
		t.Fatalf("modified index %d is not past the entries in between (created at %d)", moved.Node.ModifiedIndex, created.Node.CreatedIndex)
	}
	// set_index alone is a change.
	again, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "claim", IndexFields: nodes.IndexFields{SetIndex: []string{"fence"}}})
	if err != nil || !again.Swapped || uint64(intProp(t, again.Node, "fence")) != again.Node.ModifiedIndex {
		t.Fatalf("a CAS setting only the index: %+v %v", again, err)
	}
}

// set_index is version 2: a version 1 command that carries it is refused
// (as a version 1 binary refuses the unknown field) and changes nothing,
// and so is a field named twice or also written another way.
func TestSetIndexRefusals(t *testing.T) {
	ctx := context.Background()
	l, nc := newNodes(t)
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "n", Properties: map[string]any{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	before, err := nc.Get(ctx, "n", fsm.Stale)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, version uint16, typ log.Type, payload any, want string) {
		t.Helper()
		res, err := l.Propose(ctx, log.Command{Type: typ, Version: version, Payload: log.MustMarshal(payload)})
		if err != nil {
			t.Fatal(err)
		}
		var e *errs.Error
		if !errors.As(errOf(res), &e) || e.Code != errs.CodeInvalid || !strings.Contains(e.Message, want) {
			t.Fatalf("%s: got %v, want invalid containing %q", what, errOf(res), want)
		}
		after, err := nc.Get(ctx, "n", fsm.Stale)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Fatalf("%s changed the node (-before +after):\n%s", what, diff)
		}
		if _, err := nc.Get(ctx, "fresh", fsm.Stale); errs.CodeOf(err) != errs.CodeNotFound {
			t.Fatalf("%s created a node: %v", what, err)
		}
	}
	idx := nodes.IndexFields{SetIndex: []string{"fence"}}
	refused("a version 1 CAS with set_index", 1, nodes.CmdCAS,
		nodes.CASCommand{NodeID: "n", Updates: props("a", "2"), IndexFields: idx}, `unknown field "set_index"`)
	refused("a version 1 create with set_index", 1, nodes.CmdCreate,
		nodes.CreateCommand{NodeID: "fresh", Properties: props("a", "1"), IndexFields: idx}, `unknown field "set_index"`)
	// A version 1 binary refuses the set_index key whatever it holds, so
	// an empty or nil list in a version 1 payload is refused too.
	for _, empty := range [][]string{nil, {}} {
		refused("a version 1 CAS with an empty set_index key", 1, nodes.CmdCAS,
			v1WithKey{NodeID: "n", Updates: props("a", "2"), SetIndex: empty}, "set_index")
		refused("a version 1 create with an empty set_index key", 1, nodes.CmdCreate,
			v1WithKey{NodeID: "fresh", Properties: props("a", "1"), SetIndex: empty}, "set_index")
	}
	refused("a field both updated and set to the index", 2, nodes.CmdCAS,
		nodes.CASCommand{NodeID: "n", Updates: props("fence", "2"), IndexFields: idx}, "both set to the index")
	refused("a field both set to the time and to the index", 2, nodes.CmdCAS,
		nodes.CASCommand{NodeID: "n", TimeFields: nodes.TimeFields{SetNow: map[string]int64{"fence": 0}}, IndexFields: idx}, "both set to the index")
	refused("a created property also set to the index", 2, nodes.CmdCreate,
		nodes.CreateCommand{NodeID: "fresh", Properties: props("fence", "1"), IndexFields: idx}, "both set to the index")
	refused("a field named twice", 2, nodes.CmdCAS,
		nodes.CASCommand{NodeID: "n", IndexFields: nodes.IndexFields{SetIndex: []string{"fence", "fence"}}}, "twice")
	refused("an empty field name", 2, nodes.CmdCAS,
		nodes.CASCommand{NodeID: "n", IndexFields: nodes.IndexFields{SetIndex: []string{""}}}, "set_index field")
}

// v1WithKey is a node command payload that carries the set_index key
// even when the list is empty or nil (no omitempty).
type v1WithKey struct {
	NodeID     string                     `msgpack:"node_id"`
	Properties map[string]json.RawMessage `msgpack:"properties,omitempty"`
	Updates    map[string]json.RawMessage `msgpack:"updates,omitempty"`
	SetIndex   []string                   `msgpack:"set_index"`
}

// A bare FSM has enabled no set, so the client does not use index fields
// there; once a set is enabled the answer follows its node commands'
// version, down as well as up. Needed asks only for version 1, which an upgrading cluster
// serves.
func TestIndexFieldsEnabledNeedsAGatedSet(t *testing.T) {
	_, nc := newNodes(t)
	on, err := nc.IndexFieldsEnabled(context.Background())
	if err != nil || on {
		t.Fatalf("IndexFieldsEnabled on ungated state = %v, %v; want false", on, err)
	}
	l, nc2 := newNodes(t)
	for _, v := range []uint16{2, 1, 2} {
		if err := l.Enable(fsmtest.AtVersion(fsm.ServedBy(nodes.Module()), nodes.Name, v)); err != nil {
			t.Fatalf("enable version %d: %v", v, err)
		}
		on, err := nc2.IndexFieldsEnabled(context.Background())
		if err != nil || on != (v == 2) {
			t.Fatalf("with the node commands enabled at version %d: IndexFieldsEnabled = %v, %v", v, on, err)
		}
	}
	for _, d := range nodes.Needed().Domains {
		for _, c := range d.Commands {
			if c.Version != 1 {
				t.Fatalf("Needed asks for %s version %d", c.Name, c.Version)
			}
		}
	}
}

// BenchmarkIndexFieldsEnabled is the cost a fenced write of the concept
// authority pays to learn whether it may use set_index.
//
//	go test -run '^$' -bench IndexFieldsEnabled -count 3 ./nodes
func BenchmarkIndexFieldsEnabled(b *testing.B) {
	l := newLocal(b)
	if err := l.Enable(fsm.ServedBy(nodes.Module())); err != nil {
		b.Fatal(err)
	}
	nc := nodes.On(l)
	b.ReportAllocs()
	for b.Loop() {
		if on, err := nc.IndexFieldsEnabled(context.Background()); err != nil || !on {
			b.Fatal(on, err)
		}
	}
}

// laggingReplica answers queries as a replica that has not yet applied
// the enabled set: stale reads say set_index is off, linearizable ones
// (answered by the leader) that it is on.
type laggingReplica struct{ linearizable int }

func (r *laggingReplica) Query(_ context.Context, q fsm.Query) ([]byte, error) {
	if !q.Stale {
		r.linearizable++
	}
	return log.MustMarshal(nodes.IndexFieldsView{Enabled: !q.Stale}), nil
}

// A no from the local replica is confirmed by a linearizable read: a
// replica catching up would otherwise make its caller count fences in a
// cluster that enables index fences. A yes is taken as it comes.
func TestIndexFieldsEnabledConfirmsANo(t *testing.T) {
	r := &laggingReplica{}
	on, err := nodes.NewClient(nil, r).IndexFieldsEnabled(context.Background())
	if err != nil || !on || r.linearizable != 1 {
		t.Fatalf("IndexFieldsEnabled on a lagging replica = %v, %v after %d linearizable reads; want true after 1", on, err, r.linearizable)
	}
}
