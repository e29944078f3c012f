package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
)

func newNodes(t *testing.T) (*fsmtest.Local, *nodes.Client) {
	t.Helper()
	l, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	return l, nodes.On(l)
}

func TestCreateIfAbsentFirstWriterWins(t *testing.T) {
	ctx := context.Background()
	_, nc := newNodes(t)
	first, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "a", Labels: []string{"x"}, Properties: map[string]any{"owner": "p1", "n": 1.50}})
	if err != nil || !first.Created {
		t.Fatalf("first create: %+v, %v", first, err)
	}
	second, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "a", Properties: map[string]any{"owner": "p2"}})
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
	_, nc := newNodes(t)
	if _, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "missing", Updates: map[string]any{"a": 1}}); !errors.Is(err, errs.NotFound) {
		t.Fatalf("CAS on missing node: %v", err)
	}
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "n", Properties: map[string]any{"state": "reserved", "fence": 1}}); err != nil {
		t.Fatal(err)
	}
	lost, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n", Conditions: map[string]any{"fence": 2}, Updates: map[string]any{"state": "x"}})
	if err != nil || lost.Swapped || lost.Node.Version != 1 {
		t.Fatalf("stale CAS: %+v, %v", lost, err)
	}
	won, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n",
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
	_, nc := newNodes(t)
	req := nodes.CreateRequest{NodeID: "k", IdempotencyKey: "key-1"}
	a, err := nc.CreateIfAbsent(ctx, req)
	if err != nil || !a.Created || a.Replayed {
		t.Fatalf("first: %+v %v", a, err)
	}
	b, err := nc.CreateIfAbsent(ctx, req)
	if err != nil || !b.Created || !b.Replayed {
		t.Fatalf("replay: %+v %v", b, err)
	}
	req.NodeID = "other"
	if _, err := nc.CreateIfAbsent(ctx, req); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("reuse with another request: %v", err)
	}
}

func TestLabelPaging(t *testing.T) {
	ctx := context.Background()
	_, nc := newNodes(t)
	for _, id := range []string{"c", "a", "e", "b", "d"} {
		if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: id, Labels: []string{"L"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "z", Labels: []string{"M"}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: "L", After: cursor, Limit: 2}, fsm.Linearizable)
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
		if _, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: "L", After: bad}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
			t.Errorf("cursor %q accepted: %v", bad, err)
		}
	}
	if _, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: "M", After: cursor}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
		t.Errorf("cursor of another label accepted: %v", err)
	}
	if _, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: "L", Limit: 129}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
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
	_, nc := newNodes(t)
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "n", Labels: []string{"a", "keep"}}); err != nil {
		t.Fatal(err)
	}
	res, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n", LabelEdits: nodes.LabelEdits{AddLabels: []string{"b"}, RemoveLabels: []string{"a", "absent"}}})
	if err != nil || !res.Swapped || joined(res.Node.Labels) != "bkeep" || res.Node.Version != 2 {
		t.Fatalf("label edit: %+v %v", res, err)
	}
	count := func(label string) int {
		page, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: label}, fsm.Linearizable)
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Nodes)
	}
	if count("a") != 0 || count("b") != 1 || count("keep") != 1 {
		t.Fatalf("label index: a=%d b=%d keep=%d", count("a"), count("b"), count("keep"))
	}
	if _, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n", LabelEdits: nodes.LabelEdits{AddLabels: []string{"x"}, RemoveLabels: []string{"x"}}}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("add and remove of one label accepted: %v", err)
	}
	many := make([]string, nodes.MaxLabels)
	for i := range many {
		many[i] = fmt.Sprintf("l%02d", i)
	}
	if _, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "n", LabelEdits: nodes.LabelEdits{AddLabels: many}}); !errors.Is(err, errs.Invalid) {
		t.Fatalf("a node with more than %d labels: %v", nodes.MaxLabels, err)
	}
}

// fataler is what the helpers need; *testing.T and *rapid.T both have it.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

var bg = context.Background()

// newLocal is a bare FSM with the node primitives.
func newLocal(t fataler) *fsmtest.Local {
	t.Helper()
	l, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatalf("fsmtest.New: %v", err)
	}
	return l
}

// propose submits a version-1 command through l (keyed when key is not
// empty) and returns its response.
func propose(t fataler, l *fsmtest.Local, typ log.Type, key string, payload any) *fsm.Response {
	t.Helper()
	c := log.Command{Type: typ, Version: 1, Payload: log.MustMarshal(payload)}
	if key != "" {
		c.IdemScope, c.IdemKey = "test", key
	}
	res, err := l.Propose(bg, c)
	if err != nil {
		t.Fatalf("propose type %d: %v", typ, err)
	}
	return res
}

func decode(t fataler, b []byte, out any) {
	t.Helper()
	if err := log.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %T: %v", out, err)
	}
}

func tick(idemRetentionMs int64, feedRetain uint64, budget int) fsm.Tick {
	return fsm.Tick{IdemRetentionMs: idemRetentionMs, FeedRetain: feedRetain, Budget: budget}
}

// errOf is res.Err as an error, nil when there is none.
func errOf(res *fsm.Response) error {
	if res.Err == nil {
		return nil
	}
	return res.Err
}

// props builds a property map from field, canonical-JSON pairs.
func props(kv ...string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = json.RawMessage(kv[i+1])
	}
	return out
}

func createNode(t fataler, l *fsmtest.Local, key, id string, labels []string, p map[string]json.RawMessage) *fsm.Response {
	t.Helper()
	res := propose(t, l, nodes.CmdCreate, key, nodes.CreateCommand{NodeID: id, Labels: labels, Properties: p})
	if res.Err != nil {
		t.Fatalf("create %s: %v", id, res.Err)
	}
	return res
}

// A change-feed page read with values stays within MaxChangesValueBytes of
// values: it ends early, and the next page starts where it ended, so every
// event is read once with its value.
func TestChangeValuesPageIsBounded(t *testing.T) {
	ctx := context.Background()
	l, nc := newNodes(t)
	big := strings.Repeat("x", 62000)
	const n = 80
	for i := range n {
		if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("big-%02d", i), Properties: map[string]any{"p": big}}); err != nil {
			t.Fatal(err)
		}
	}
	seen, pages := 0, 0
	for after := uint64(0); seen < n; pages++ {
		if pages > n {
			t.Fatal("the pages do not progress")
		}
		var page fsm.ChangesPage
		if err := fsm.Ask(ctx, l, fsm.QueryChanges, true, fsm.ChangesRequest{After: after, Values: true}, &page); err != nil {
			t.Fatal(err)
		}
		bytes := 0
		for _, e := range page.Events {
			if e.Seq != after+1 {
				t.Fatalf("event %d after %d: a gap", e.Seq, after)
			}
			after = e.Seq
			if e.Kind != "node_create" {
				continue
			}
			if e.Key != fmt.Sprintf("big-%02d", seen) || !strings.Contains(string(e.Value), big) || e.Overwritten {
				t.Fatalf("event %d: %s without its value", e.Seq, e.Key)
			}
			bytes += len(e.Value)
			seen++
		}
		if bytes > fsm.MaxChangesValueBytes {
			t.Fatalf("a page of %d value bytes", bytes)
		}
		if page.Next != after {
			t.Fatalf("next %d, last event %d", page.Next, after)
		}
	}
	if pages < 2 {
		t.Fatalf("%d events of 62 KB in %d page(s): the bound did not end a page", n, pages)
	}
}

// A create stores no null property (null means absent), writes set_now's
// fields, and keeps the rest as the command gave them: in the result and
// in the store. The client drops nulls before it sends, so only a raw
// command (another client's, or an older one's) carries them.
func TestCreateCommandStoresNoNulls(t *testing.T) {
	l := newLocal(t)
	l.SetClock(1_000)
	res := propose(t, l, nodes.CmdCreate, "", nodes.CreateCommand{NodeID: "n", SetNow: map[string]int64{"at": 5},
		Properties: map[string]json.RawMessage{
			"b": json.RawMessage("null"), "a": json.RawMessage("1"), "c": json.RawMessage(`"x"`), "aa": json.RawMessage("null"),
		}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var created nodes.CreateResult
	decode(t, res.Result, &created)
	want := map[string]json.RawMessage{"a": json.RawMessage("1"), "at": json.RawMessage("1005"), "c": json.RawMessage(`"x"`)}
	if diff := cmp.Diff(want, created.Node.Properties); diff != "" {
		t.Fatalf("created properties (-want +got):\n%s", diff)
	}
	out, err := l.Query(bg, fsm.Query{Type: nodes.QueryGet, Payload: log.MustMarshal(nodes.GetQuery{NodeID: "n"})})
	if err != nil {
		t.Fatal(err)
	}
	var stored nodes.Record
	decode(t, out, &stored)
	if diff := cmp.Diff(want, stored.Properties); diff != "" {
		t.Fatalf("stored properties (-want +got):\n%s", diff)
	}
}

// A create's result holds its labels and properties as empty containers,
// never nil, whatever the command left out: results are recorded in the
// idempotency ledger, part of the replicated state, so their bytes must
// not change from one version to the next.
func TestCreateResultHasNoNilContainers(t *testing.T) {
	l := newLocal(t)
	for i, c := range []nodes.CreateCommand{
		{NodeID: "bare"},
		{NodeID: "nulls", Properties: map[string]json.RawMessage{"gone": json.RawMessage("null")}},
		{NodeID: "empty", Labels: []string{}, Properties: map[string]json.RawMessage{}},
		{NodeID: "stamped", SetNow: map[string]int64{"at": 0}},
	} {
		res := propose(t, l, nodes.CmdCreate, fmt.Sprint("k", i), c)
		if res.Err != nil {
			t.Fatalf("%s: %v", c.NodeID, res.Err)
		}
		var out nodes.CreateResult
		decode(t, res.Result, &out)
		if !out.Created || out.Node.Labels == nil || out.Node.Properties == nil {
			t.Fatalf("%s: result %+v: labels or properties encoded as nil", c.NodeID, out)
		}
	}
}
