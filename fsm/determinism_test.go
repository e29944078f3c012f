package fsm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
	"pgregory.net/rapid"
)

// Helpers shared by the tests of this package.

// fataler is what the helpers need; *testing.T and *rapid.T both have it.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

var bg = context.Background()

func newLocal(t fataler) *fsmtest.Local {
	t.Helper()
	l, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatalf("fsmtest.New: %v", err)
	}
	return l
}

func newFSM(t fataler) *fsm.FSM {
	t.Helper()
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatalf("fsm.New: %v", err)
	}
	return f
}

// fsmReader reads a bare FSM as an fsm.Reader.
type fsmReader struct{ f *fsm.FSM }

func (r fsmReader) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	p, _ := fsm.PrincipalFrom(ctx)
	return r.f.Query(p, q)
}

// command builds a version-1 command; a non-empty key makes it keyed.
func command(typ log.Type, key string, payload any) log.Command {
	c := log.Command{Type: typ, Version: 1, Payload: log.MustMarshal(payload)}
	if key != "" {
		c.IdemScope, c.IdemKey = "test", key
	}
	return c
}

// propose submits a command through l and returns its response.
func propose(t fataler, l *fsmtest.Local, typ log.Type, key string, payload any) *fsm.Response {
	t.Helper()
	res, err := l.Propose(bg, command(typ, key, payload))
	if err != nil {
		t.Fatalf("propose type %d: %v", typ, err)
	}
	return res
}

// proposeOK is propose for a command that must succeed.
func proposeOK(t fataler, l *fsmtest.Local, typ log.Type, key string, payload any) *fsm.Response {
	t.Helper()
	res := propose(t, l, typ, key, payload)
	if res.Err != nil {
		t.Fatalf("command type %d failed: %v", typ, res.Err)
	}
	return res
}

func createNode(t fataler, l *fsmtest.Local, key, id string, labels []string, p map[string]json.RawMessage) *fsm.Response {
	t.Helper()
	return proposeOK(t, l, nodes.CmdCreate, key, nodes.CreateCommand{NodeID: id, Labels: labels, Properties: p})
}

// props builds a property map from field, canonical-JSON pairs.
func props(kv ...string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = json.RawMessage(kv[i+1])
	}
	return out
}

func tick(idemRetentionMs int64, feedRetain uint64, budget int) fsm.Tick {
	return fsm.Tick{IdemRetentionMs: idemRetentionMs, FeedRetain: feedRetain, Budget: budget}
}

// richLocal builds a state with rows in every table the FSM has: nodes and
// their labels, swapped nodes, idempotency rows (one already pruned),
// change events (the oldest pruned) and members (one removed again).
func richLocal(t fataler) *fsmtest.Local {
	t.Helper()
	l := newLocal(t)
	createNode(t, l, "k-old", "old", nil, nil)
	createNode(t, l, "", "a", []string{"L1", "L2"}, props("owner", `"p1"`, "fence", "1", "meta", `{"n":1.5,"tags":["x","y"]}`))
	createNode(t, l, "", "b", []string{"L1"}, props("state", `"free"`))
	createNode(t, l, "", "c", nil, nil)
	l.Advance(2 * time.Second)
	createNode(t, l, "k1", "d", []string{"L2"}, props("big", "123456789012345678901"))
	proposeOK(t, l, nodes.CmdCAS, "k2", nodes.CASCommand{NodeID: "a",
		Conditions: props("fence", "1", "gone", "null"), Updates: props("fence", "2", "owner", "null")})
	var lost nodes.CASResult
	decode(t, proposeOK(t, l, nodes.CmdCAS, "", nodes.CASCommand{NodeID: "b",
		Conditions: props("state", `"taken"`), Updates: props("state", `"x"`)}).Result, &lost)
	if lost.Swapped {
		t.Fatalf("CAS with a false condition swapped")
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		proposeOK(t, l, fsm.CmdMemberUpsert, "", fsm.Member{ID: id, RaftAddr: "raft-" + id + ":7000", APIAddr: "http://" + id + ":8080"})
	}
	proposeOK(t, l, fsm.CmdMemberRemove, "", fsm.Member{ID: "n2"})
	for _, id := range []string{"e00", "e01", "e02", "e03", "e04", "e05", "e06", "e07", "e08", "e09",
		"e10", "e11", "e12", "e13", "e14", "e15", "e16", "e17", "e18", "e19"} {
		createNode(t, l, "", id, []string{"L3"}, props("n", "1"))
	}
	// 30 events so far (4+1 creates, 1 swap, 4 member changes, 20 creates);
	// keep 16. The ledger row of k-old is 2 s old, older than 1 s.
	var tr fsm.TickResult
	decode(t, proposeOK(t, l, fsm.CmdTick, "", tick(1000, 16, fsm.MaxTickBudget)).Result, &tr)
	if tr.IdemPruned != 1 || tr.FeedPruned != 14 {
		t.Fatalf("rich state tick pruned %d ledger rows and %d events, want 1 and 14", tr.IdemPruned, tr.FeedPruned)
	}
	l.Advance(time.Second)
	proposeOK(t, l, nodes.CmdCAS, "k3", nodes.CASCommand{NodeID: "c", Updates: props("state", `"held"`)})
	return l
}

func decode(t fataler, b []byte, out any) {
	t.Helper()
	if err := log.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %T: %v", out, err)
	}
}

// TestSameLogSameState replays one applied log, bad entries and clock
// jumps included, on fresh FSMs: one entry at a time, in random batches,
// and with raft's non-command entries mixed in. Every replica must reach the
// same state hash and snapshot bytes and give the same responses, and the
// FSM clock must never go back even when the proposer's clock does.
func TestSameLogSameState(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := newLocal(t)
		var responses []*fsm.Response
		clock := fsmtest.Epoch
		ids := rapid.SampledFrom([]string{"a", "b", "c"})
		values := rapid.SampledFrom([]string{"1", `"x"`, "true", `{"k":[1,2]}`, "null", "1.0"}) // 1.0 is not canonical
		fields := rapid.MapOfN(rapid.SampledFrom([]string{"f", "g"}), rapid.Map(values, func(v string) json.RawMessage { return json.RawMessage(v) }), 0, 2)
		for n := rapid.IntRange(1, 40).Draw(t, "entries"); len(responses) < n; {
			var res *fsm.Response
			switch op := rapid.IntRange(0, 10).Draw(t, "op"); op {
			case 0, 1:
				res = propose(t, l, nodes.CmdCreate, "", nodes.CreateCommand{NodeID: ids.Draw(t, "id"),
					Labels:     rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"L1", "L2"}), 0, 2, rapid.ID[string]).Draw(t, "labels"),
					Properties: fields.Draw(t, "props")})
			case 2, 3:
				res = propose(t, l, nodes.CmdCAS, "", nodes.CASCommand{NodeID: ids.Draw(t, "id"),
					Conditions: fields.Draw(t, "conditions"), Updates: fields.Draw(t, "updates")})
			case 4:
				// Keyed: replays, conflicts and, after ticks, re-runs.
				key := rapid.SampledFrom([]string{"k1", "k2"}).Draw(t, "key")
				if rapid.Bool().Draw(t, "keyed create") {
					res = propose(t, l, nodes.CmdCreate, key, nodes.CreateCommand{NodeID: ids.Draw(t, "id")})
				} else {
					res = propose(t, l, nodes.CmdCAS, key, nodes.CASCommand{NodeID: ids.Draw(t, "id"), Updates: fields.Draw(t, "updates")})
				}
			case 5:
				// Mostly valid (so that ledger and feed get pruned), each
				// parameter sometimes under its minimum.
				res = propose(t, l, fsm.CmdTick, "", tick(rapid.SampledFrom([]int64{999, 1000, 2000}).Draw(t, "retention"),
					rapid.SampledFrom([]uint64{15, 16, 17}).Draw(t, "feed retain"), rapid.SampledFrom([]int{0, 1, 3, fsm.MaxTickBudget}).Draw(t, "budget")))
			case 6:
				m := fsm.Member{ID: rapid.SampledFrom([]string{"n1", "n2"}).Draw(t, "member"), RaftAddr: "r", APIAddr: "a"}
				res = propose(t, l, rapid.SampledFrom([]log.Type{fsm.CmdMemberUpsert, fsm.CmdMemberRemove}).Draw(t, "member op"), "", m)
			case 7:
				res = l.ApplyRaw(rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "garbage"))
			case 8:
				good, err := log.Encode(command(nodes.CmdCreate, "", nodes.CreateCommand{NodeID: "z"}))
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				res = l.ApplyRaw(good[:rapid.IntRange(0, len(good)-1).Draw(t, "cut")])
			case 9:
				c := command(rapid.SampledFrom([]log.Type{nodes.CmdCreate, 99, 65535}).Draw(t, "type"), "", nodes.CreateCommand{NodeID: "v"})
				c.Version = rapid.SampledFrom([]uint16{0, 1, 2}).Draw(t, "version")
				var err error
				if res, err = l.Propose(bg, c); err != nil {
					t.Fatalf("propose: %v", err)
				}
			case 10:
				// The proposer's clock jumps, often backwards; no entry.
				clock += rapid.Int64Range(-10000, 5000).Draw(t, "clock jump")
				l.SetClock(clock)
				continue
			}
			responses = append(responses, res)
		}
		entries := l.Log()

		// A replica replaying the exact log in one batch answers as l did.
		same := newFSM(t)
		out := same.ApplyBatch(entries)
		for i := range entries {
			if diff := cmp.Diff(responses[i], out[i]); diff != "" {
				t.Fatalf("entry %d: replica answered differently (-leader +replica):\n%s", i+1, diff)
			}
		}
		fsmtest.AssertSameState(t, l.FSM, same)

		// The FSM keeps nothing of an entry's bytes (the payload it
		// decodes shares them): writing over them once applied changes
		// no state.
		copied := make([]*raft.Log, len(entries))
		for i, e := range entries {
			c := *e
			c.Data = bytes.Clone(e.Data)
			copied[i] = &c
		}
		scribbled := newFSM(t)
		scribbled.ApplyBatch(copied)
		for _, e := range copied {
			for i := range e.Data {
				e.Data[i] = 0xc1 // never used in msgpack
			}
		}
		fsmtest.AssertSameState(t, l.FSM, scribbled)

		// Two replicas of a log with raft's own entries mixed in.
		mixed := withNonCommands(t, entries)
		one, batched := newFSM(t), newFSM(t)
		var oneOut []any
		var lastNow, lastTime int64
		for _, e := range mixed {
			r := one.Apply(e)
			oneOut = append(oneOut, r)
			if one.Now() < lastNow {
				t.Fatalf("index %d: FSM clock went back from %d to %d", e.Index, lastNow, one.Now())
			}
			lastNow = one.Now()
			if res, ok := r.(*fsm.Response); ok && !res.Replayed {
				if res.Time < lastTime {
					t.Fatalf("index %d: response time went back from %d to %d", e.Index, lastTime, res.Time)
				}
				lastTime = res.Time
			}
		}
		var batchedOut []any
		for rest := mixed; len(rest) > 0; {
			k := rapid.IntRange(1, len(rest)).Draw(t, "batch")
			batchedOut = append(batchedOut, batched.ApplyBatch(rest[:k])...)
			rest = rest[k:]
		}
		if diff := cmp.Diff(oneOut, batchedOut); diff != "" {
			t.Fatalf("Apply and ApplyBatch answered differently:\n%s", diff)
		}
		fsmtest.AssertSameState(t, one, batched)
		if one.AppliedIndex() != mixed[len(mixed)-1].Index {
			t.Fatalf("applied index %d, want %d", one.AppliedIndex(), mixed[len(mixed)-1].Index)
		}
	})
}

// withNonCommands renumbers entries with raft's no-op, barrier and
// configuration entries drawn in between; the FSM must only count them.
func withNonCommands(t *rapid.T, entries []*raft.Log) []*raft.Log {
	var out []*raft.Log
	next := uint64(1)
	add := func(typ raft.LogType, data []byte) {
		out = append(out, &raft.Log{Index: next, Term: 2, Type: typ, Data: data})
		next++
	}
	kinds := rapid.SampledFrom([]raft.LogType{raft.LogNoop, raft.LogBarrier, raft.LogConfiguration})
	for _, e := range entries {
		for rapid.IntRange(0, 3).Draw(t, "extra") == 0 {
			add(kinds.Draw(t, "kind"), []byte("not a command"))
		}
		add(e.Type, e.Data)
	}
	return out
}

// TestSnapshotRestoreSnapshot pins the format's fixed point on a state with
// every table populated, and checks that what a restore rebuilds is the
// whole state: the restored FSM goes on exactly like the original.
func TestSnapshotRestoreSnapshot(t *testing.T) {
	l := richLocal(t)
	first := fsmtest.Snapshot(t, l.FSM)
	restored := restoreFresh(t, first)
	if second := fsmtest.Snapshot(t, restored); !bytes.Equal(first, second) {
		t.Fatalf("Snapshot, Restore, Snapshot changed the bytes (%d vs %d bytes)", len(first), len(second))
	}
	_, sum := fsmtest.StateHash(t, l.FSM)
	if !bytes.Equal(sum[:], first[len(first)-trailerLen:]) {
		t.Fatal("the state hash is not the snapshot's trailer")
	}
	fsmtest.AssertSameState(t, l.FSM, restored)
	if restored.AppliedIndex() != l.FSM.AppliedIndex() {
		t.Fatalf("restored applied index %d, want %d", restored.AppliedIndex(), l.FSM.AppliedIndex())
	}
	if diff := cmp.Diff(l.FSM.Members(), restored.Members()); diff != "" {
		t.Fatalf("members differ:\n%s", diff)
	}

	// Restore replaces a non-empty state entirely.
	other := targetState(t)
	if err := restore(other, first); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fsmtest.Snapshot(t, other), first) {
		t.Fatal("restore over an existing state kept some of it")
	}

	// The same next entries on the original and the restored copy: a
	// replayed key (the ledger survived), a new node (the label index), a
	// swap (versions) and a tick (feed sequences and ledger times).
	next := []log.Command{
		command(nodes.CmdCreate, "k1", nodes.CreateCommand{NodeID: "d", Labels: []string{"L2"}, Properties: props("big", "123456789012345678901")}),
		command(nodes.CmdCreate, "", nodes.CreateCommand{NodeID: "new", Labels: []string{"L1"}}),
		command(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "a", Conditions: props("fence", "2"), Updates: props("fence", "3")}),
		command(fsm.CmdTick, "", tick(1000, 16, 3)),
	}
	index := l.FSM.AppliedIndex()
	for i, c := range next {
		c.Stamp = fsmtest.Epoch + 60_000
		data, err := log.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		index++
		entry := &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
		want, got := l.FSM.Apply(entry).(*fsm.Response), restored.Apply(entry).(*fsm.Response)
		if want.Err != nil {
			t.Fatalf("next command %d failed on the original: %v", i, want.Err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("next command %d: restored FSM answered differently (-original +restored):\n%s", i, diff)
		}
		if i == 0 && !got.Replayed {
			t.Fatal("the idempotency ledger did not survive the restore")
		}
	}
	fsmtest.AssertSameState(t, l.FSM, restored)
}

// TestFailureResponsesAgree: a command with several bad fields must name
// the same one on every replica. Go randomizes map iteration per range
// loop, so 32 replicas agree by chance with probability well under 2^-30
// if a handler reports the first bad field in map order.
func TestFailureResponsesAgree(t *testing.T) {
	bad := props("a", "1.0", "b", "01", "c", `"x"`, "d", "+1", "e", "[1, 2]")
	for _, c := range []log.Command{
		command(nodes.CmdCreate, "", nodes.CreateCommand{NodeID: "n", Properties: bad}),
		command(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "n", Conditions: bad, Updates: bad}),
		command(nodes.CmdCAS, "", nodes.CASCommand{NodeID: "n", Updates: bad}),
	} {
		data, err := log.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		entry := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data}
		first := newFSM(t).Apply(entry).(*fsm.Response)
		if first.Err == nil {
			t.Fatalf("command type %d with bad fields succeeded", c.Type)
		}
		for range 31 {
			if other := newFSM(t).Apply(entry); !cmp.Equal(first, other) {
				t.Fatalf("replicas disagree on the failure:\n%s", cmp.Diff(first, other))
			}
		}
	}
}
