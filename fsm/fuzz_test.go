package fsm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
)

// The fuzz targets feed arbitrary bytes to the three ways in from outside:
// a log entry (Apply), a snapshot (Restore) and a query. A panic in any of
// them would stop every replica at once.

// fuzzSeed is the log of the state every fuzz input starts from: nodes
// (one swapped), labels, ledger rows under keys k1 and k2, a member and
// change events.
type fuzzSeed []*raft.Log

func newSeed(t fataler) fuzzSeed {
	t.Helper()
	l := newLocal(t)
	createNode(t, l, "", "a", []string{"L1", "L2"}, props("owner", `"p1"`, "fence", "1"))
	createNode(t, l, "", "b", []string{"L1"}, nil)
	createNode(t, l, "k1", "c", nil, props("x", `{"y":[1,true]}`))
	proposeOK(t, l, nodes.CmdCAS, "k2", nodes.CASCommand{NodeID: "a", Conditions: props("fence", "1"), Updates: props("fence", "2")})
	proposeOK(t, l, fsm.CmdMemberUpsert, "", fsm.Member{ID: "n1", RaftAddr: "r1", APIAddr: "a1"})
	return l.Log()
}

// fsm returns a fresh FSM that has applied the seed log.
func (s fuzzSeed) fsm(t fataler) *fsm.FSM {
	t.Helper()
	f := newFSM(t)
	f.ApplyBatch(s)
	return f
}

func encoded(t testing.TB, c log.Command) []byte {
	t.Helper()
	b, err := log.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// applySeeds are valid commands of every type (succeeding, failing,
// replayed, conflicting, unknown) and broken variants of them.
func applySeeds(t testing.TB) [][]byte {
	stamped := func(c log.Command) log.Command { c.Stamp = 1767225700000; return c }
	var valid [][]byte
	for _, c := range []log.Command{
		command(nodes.CmdCreate, "", nodes.CreateCommand{NodeID: "new", Labels: []string{"L1"}, Properties: props("p", `"v"`)}),
		command(nodes.CmdCreate, "", nodes.CreateCommand{NodeID: "a"}),
		command(nodes.CmdCreate, "", nodes.CreateCommand{NodeID: ""}),
		command(nodes.CmdCreate, "", nodes.CreateCommand{NodeID: "n", Properties: props("p", "1.0")}),
		command(nodes.CmdCreate, "k1", nodes.CreateCommand{NodeID: "c", Properties: props("x", `{"y":[1,true]}`)}),
		command(nodes.CmdCreate, "k1", nodes.CreateCommand{NodeID: "other"}),
		command(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "a", Conditions: props("fence", "2"), Updates: props("fence", "3", "owner", "null")}),
		command(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "a", Conditions: props("fence", "9"), Updates: props("fence", "3")}),
		command(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "missing", Updates: props("f", "1")}),
		command(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "a"}),
		command(nodes.CmdCAS, "k2", nodes.CASCommand{NodeID: "a", Conditions: props("fence", "1"), Updates: props("fence", "2")}),
		stamped(command(fsm.CmdTick, "", tick(1000, 16, 8))),
		command(fsm.CmdTick, "", tick(0, 0, 0)),
		command(fsm.CmdMemberUpsert, "", fsm.Member{ID: "n2", RaftAddr: "r2", APIAddr: "a2"}),
		command(fsm.CmdMemberRemove, "", fsm.Member{ID: "n1"}),
		command(fsm.CmdMemberRemove, "", fsm.Member{ID: "nobody"}),
		command(999, "", nodes.CreateCommand{NodeID: "x"}),
		stamped(command(999, "", nodes.CreateCommand{NodeID: "x"})), // refused: the clock stays
		{Type: nodes.CmdCreate, Version: 2, Payload: log.MustMarshal(nodes.CreateCommand{NodeID: "x"})},
		{Type: nodes.CmdCreate, Version: 2, Payload: log.MustMarshal(nodes.CreateCommand{NodeID: "y", IndexFields: nodes.IndexFields{SetIndex: []string{"fence"}}})},
		{Type: nodes.CmdCAS, Version: 2, Payload: log.MustMarshal(nodes.CASCommand{NodeID: "a", Conditions: props("fence", "1"), IndexFields: nodes.IndexFields{SetIndex: []string{"fence"}}})},
		{Type: nodes.CmdCAS, Version: 1, Payload: log.MustMarshal(nodes.CASCommand{NodeID: "a", IndexFields: nodes.IndexFields{SetIndex: []string{"fence"}}})},
		{Type: nodes.CmdCAS, Version: 3, Payload: log.MustMarshal(nodes.CASCommand{NodeID: "a", Updates: props("f", "1")})},
		// The set_index key with an empty list: refused at version 1, as
		// a binary without the field refuses it.
		{Type: nodes.CmdCAS, Version: 1, Payload: log.MustMarshal(struct {
			NodeID   string                     `msgpack:"node_id"`
			Updates  map[string]json.RawMessage `msgpack:"updates"`
			SetIndex []string                   `msgpack:"set_index"`
		}{"a", props("f", "1"), []string{}})},
		{Type: nodes.CmdCreate, Version: 0, Payload: log.MustMarshal(nodes.CreateCommand{NodeID: "x"})},
	} {
		valid = append(valid, encoded(t, c))
	}
	out := [][]byte{nil, {0xA1}, {0xA1, 0xc0}}
	for _, b := range valid {
		flipped := bytes.Clone(b)
		flipped[len(b)/2] ^= 0x20
		out = append(out, b, b[:len(b)-1], flipped)
	}
	return out
}

// FuzzApply applies arbitrary bytes as the next entry after the seed state.
//
// What must hold, whatever the bytes: no panic and no recovered handler
// panic; a *fsm.Response for the entry's index; the FSM clock becomes
// max(clock, stamp) when the entry is dispatched (it decodes to a known
// type and version) and stays put when it is refused.
// When the response carries an error (or is a replay), the state is
// unchanged except for the index and the clock. That is checked on the
// snapshot stream with exactly those two values taken out of the header and
// the meta row (stateWithoutClock), which compares every row of every table,
// including the feed's sequence counters, without relying on any other
// command being a no-op. Any response must also be the same on a second
// replica, and a state reached by a success must survive snapshot and
// restore byte for byte.
func FuzzApply(f *testing.F) {
	for _, b := range applySeeds(f) {
		f.Add(b)
	}
	seed := newSeed(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		a := seed.fsm(t)
		before := stateWithoutClock(t, a)
		nowBefore := a.Now()
		entry := &raft.Log{Index: a.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}

		out := a.Apply(entry)
		res, ok := out.(*fsm.Response)
		if !ok || res == nil {
			t.Fatalf("Apply returned %#v, want a *fsm.Response", out)
		}
		if a.Panics() != 0 {
			t.Fatalf("a handler panicked on %x", data)
		}
		if a.AppliedIndex() != entry.Index {
			t.Fatalf("applied index %d, want %d", a.AppliedIndex(), entry.Index)
		}
		// An entry the FSM cannot dispatch (undecodable, unknown type or
		// version) is refused: only the index moves. Every other entry
		// moves the clock to its stamp if that is later.
		cmd, decErr := log.Decode(data)
		wantNow := nowBefore
		if decErr == nil && dispatchable(cmd) {
			wantNow = max(nowBefore, cmd.Stamp)
		} else if !errors.Is(errOf(res), errs.Invalid) {
			t.Fatalf("entry that cannot be dispatched answered %+v, want invalid", res)
		}
		if a.Now() != wantNow {
			t.Fatalf("clock %d, want %d", a.Now(), wantNow)
		}
		switch {
		case res.Replayed:
			if res.Err != nil || res.Index >= entry.Index {
				t.Fatalf("replay %+v", res)
			}
		case res.Err != nil:
			if !errs.Known(res.Err.Code) || len(res.Result) != 0 || res.Index != entry.Index {
				t.Fatalf("failure response %+v", res)
			}
		default:
			if res.Index != entry.Index || res.Time != wantNow {
				t.Fatalf("success response %+v at index %d, time %d", res, entry.Index, wantNow)
			}
			checkResult(t, cmd.Type, res.Result)
		}
		if res.Err != nil || res.Replayed {
			if after := stateWithoutClock(t, a); !slices.EqualFunc(before, after, func(x, y frame) bool {
				return x.kind == y.kind && bytes.Equal(x.body, y.body)
			}) {
				t.Fatalf("entry %x answered %v but changed the state:\n%s", data, res.Err, cmp.Diff(before, after, frameCmp))
			}
		} else {
			first := fsmtest.Snapshot(t, a)
			if again := fsmtest.Snapshot(t, restoreFresh(t, first)); !bytes.Equal(first, again) {
				t.Fatal("state after this entry does not survive snapshot and restore")
			}
		}

		b := seed.fsm(t)
		if other := b.Apply(entry); !cmp.Equal(res, other) {
			t.Fatalf("a second replica answered differently:\n%s", cmp.Diff(res, other))
		}
		fsmtest.AssertSameState(t, a, b)
	})
}

// dispatchable reports whether the FSM has a handler for c: the core and
// node commands: the core ones at version 1, the node ones at 1 and 2
// (set_index).
func dispatchable(c log.Command) bool {
	switch c.Type {
	case fsm.CmdMemberUpsert, fsm.CmdMemberRemove, fsm.CmdEnable, fsm.CmdClusterID:
		return c.Version == 1
	case fsm.CmdTick:
		return c.Version == 1 || c.Version == 2
	case nodes.CmdCreate, nodes.CmdCAS:
		return c.Version == 1 || c.Version == nodes.IndexVersion
	}
	return false
}

// errOf is res.Err as an error, nil when there is none.
func errOf(res *fsm.Response) error {
	if res.Err == nil {
		return nil
	}
	return res.Err
}

// checkResult decodes a success's result as its command's result type.
func checkResult(t *testing.T, typ log.Type, body []byte) {
	t.Helper()
	var out any
	switch typ {
	case nodes.CmdCreate:
		out = new(nodes.CreateResult)
	case nodes.CmdCAS:
		out = new(nodes.CASResult)
	case fsm.CmdTick:
		out = new(fsm.TickResult)
	case fsm.CmdMemberUpsert, fsm.CmdMemberRemove:
		out = new(fsm.Member)
	default:
		t.Fatalf("command type %d succeeded; only known types may", typ)
	}
	decode(t, body, out)
}

// FuzzRestore restores arbitrary bytes over the seed state, both as they
// are and with a correct trailer appended (so that inputs reach the row
// decoding and the consistency checks behind the checksum). A refused
// stream must leave the state exactly as it was; an accepted one must be a
// state that snapshots to a fixed point and that reads without panics.
func FuzzRestore(f *testing.F) {
	// Small seeds keep the fuzzer's minimization of new inputs short.
	seed := newSeed(f)
	small := fsmtest.Snapshot(f, seed.fsm(f))
	f.Add(small)
	f.Add(small[:len(small)-trailerLen])
	f.Add(small[:len(small)/2])
	flipped := bytes.Clone(small)
	flipped[len(small)/3] ^= 1
	f.Add(flipped)
	f.Add(fsmtest.Snapshot(f, newFSM(f)))
	f.Add([]byte("ARBSNAP\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sum := sha256.Sum256(data)
		target := seed.fsm(t)
		before, applied := fsmtest.Snapshot(t, target), target.AppliedIndex()
		for _, stream := range [][]byte{data, append(bytes.Clone(data), sum[:]...)} {
			checkPrepareRestore(t, target, stream)
			if err := restore(target, stream); err != nil {
				if !errors.Is(err, fsm.ErrSnapshot) {
					t.Fatalf("Restore error %v does not wrap ErrSnapshot", err)
				}
				if target.AppliedIndex() != applied || !bytes.Equal(fsmtest.Snapshot(t, target), before) {
					t.Fatal("a refused restore changed the state")
				}
				continue
			}
			first := fsmtest.Snapshot(t, target)
			if again := fsmtest.Snapshot(t, restoreFresh(t, first)); !bytes.Equal(first, again) {
				t.Fatal("an accepted snapshot does not reach a fixed point")
			}
			for _, q := range readQueries() {
				_, _ = target.Query(identity.Principal{}, q)
			}
			if target.Panics() != 0 {
				t.Fatal("a query panicked on a restored state")
			}
			target = seed.fsm(t)
		}
	})
}

// checkPrepareRestore: a backup PrepareRestore refuses wraps ErrSnapshot
// and gets nothing written; one it accepts becomes a stream Restore takes,
// at the index PrepareRestore reports. The live state is never touched.
func checkPrepareRestore(t *testing.T, live *fsm.FSM, backup []byte) {
	before := fsmtest.Snapshot(t, live)
	var out bytes.Buffer
	_, index, err := live.PrepareRestore(bytes.NewReader(backup), &out)
	if !bytes.Equal(fsmtest.Snapshot(t, live), before) {
		t.Fatal("PrepareRestore changed the live state")
	}
	if err != nil {
		if !errors.Is(err, fsm.ErrSnapshot) || out.Len() != 0 {
			t.Fatalf("PrepareRestore refused with %v after writing %d bytes", err, out.Len())
		}
		return
	}
	if restored := restoreFresh(t, out.Bytes()); restored.AppliedIndex() != index || index < live.AppliedIndex() {
		t.Fatalf("prepared stream restores at index %d; PrepareRestore said %d, the live state is at %d", restored.AppliedIndex(), index, live.AppliedIndex())
	}
}

// readQueries are valid queries of every type over the seed state.
func readQueries() []fsm.Query {
	return []fsm.Query{
		{Type: fsm.QueryMembers},
		{Type: fsm.QueryChanges, Payload: log.MustMarshal(fsm.ChangesRequest{})},
		{Type: fsm.QueryChanges, Payload: log.MustMarshal(fsm.ChangesRequest{After: 2, Limit: 1})},
		{Type: nodes.QueryGet, Payload: log.MustMarshal(nodes.GetQuery{NodeID: "a"})},
		{Type: nodes.QueryByLabel, Payload: log.MustMarshal(nodes.LabelQuery{Label: "L1", Limit: 1})},
		{Type: nodes.QueryByLabel, Payload: log.MustMarshal(nodes.LabelQuery{Label: "L1", After: "n1.x"})},
	}
}

// FuzzQuery runs arbitrary payloads through every query type (and
// arbitrary types) against the seed state. A query answers with a known,
// non-internal error code or with a result that decodes as its type and
// keeps its page bound; it never panics and never changes the state.
func FuzzQuery(f *testing.F) {
	for _, q := range readQueries() {
		f.Add(uint16(q.Type), q.Payload)
	}
	f.Add(uint16(fsm.QueryChanges), log.MustMarshal(fsm.ChangesRequest{Limit: fsm.MaxChangesPage + 1}))
	f.Add(uint16(nodes.QueryGet), []byte{0xc0})
	f.Add(uint16(fsm.QueryCapabilities), []byte{0x80})
	f.Add(uint16(nodes.QueryIndexFields), []byte{0x80})
	f.Add(uint16(999), []byte{})
	target := newSeed(f).fsm(f)
	_, hash := fsmtest.StateHash(f, target)
	f.Fuzz(func(t *testing.T, typ uint16, payload []byte) {
		out, err := target.Query(identity.Principal{}, fsm.Query{Type: fsm.QueryType(typ), Payload: payload})
		if target.Panics() != 0 {
			t.Fatal("a query handler panicked")
		}
		if _, h := fsmtest.StateHash(t, target); h != hash {
			t.Fatal("a query changed the state")
		}
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !errs.Known(e.Code) || e.Code == errs.CodeInternal {
				t.Fatalf("query %d %x: error %v", typ, payload, err)
			}
			return
		}
		switch fsm.QueryType(typ) {
		case fsm.QueryMembers:
			var ms []fsm.Member
			decode(t, out, &ms)
			if len(ms) > fsm.MaxMembers {
				t.Fatalf("%d members", len(ms))
			}
		case fsm.QueryChanges:
			var req fsm.ChangesRequest
			decode(t, payload, &req)
			var page fsm.ChangesPage
			decode(t, out, &page)
			bound := req.Limit
			if bound == 0 {
				bound = fsm.MaxChangesPage
			}
			if len(page.Events) > bound {
				t.Fatalf("%d events, limit %d", len(page.Events), bound)
			}
			for _, e := range page.Events {
				if e.Seq <= req.After || e.Seq > page.LastSeq {
					t.Fatalf("event %d outside (%d, %d]", e.Seq, req.After, page.LastSeq)
				}
			}
		case fsm.QueryCapabilities:
			var v fsm.CapabilitiesView
			decode(t, out, &v)
			if !v.Served.Equal(target.Served()) || !v.Gated && !v.Enabled.Equal(v.Served) {
				t.Fatalf("capabilities %+v; the replica serves %+v", v, target.Served())
			}
		case nodes.QueryIndexFields:
			var v nodes.IndexFieldsView
			decode(t, out, &v)
			if v.Enabled {
				t.Fatal("index fields enabled on a state no set has gated")
			}
		case nodes.QueryGet:
			var q nodes.GetQuery
			decode(t, payload, &q)
			var n nodes.Record
			decode(t, out, &n)
			if n.NodeID != q.NodeID {
				t.Fatalf("asked for %q, got %q", q.NodeID, n.NodeID)
			}
		case nodes.QueryByLabel:
			var q nodes.LabelQuery
			decode(t, payload, &q)
			var page nodes.Page
			decode(t, out, &page)
			if len(page.Nodes) > nodes.MaxLabelPage || q.Limit > 0 && len(page.Nodes) > q.Limit {
				t.Fatalf("%d nodes, limit %d", len(page.Nodes), q.Limit)
			}
			for i, n := range page.Nodes {
				if !slices.Contains(n.Labels, q.Label) || i > 0 && n.NodeID <= page.Nodes[i-1].NodeID {
					t.Fatalf("page %+v for label %q", page, q.Label)
				}
			}
		default:
			t.Fatalf("unknown query type %d answered", typ)
		}
	})
}
