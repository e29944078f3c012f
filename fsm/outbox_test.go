package fsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
)

const (
	cmdOutbox     log.Type = 902 // emits n payload events and answers their sequences
	cmdOutboxFail log.Type = 903 // emits one, then fails
)

type outboxCmd struct {
	N       int    `msgpack:"n"`
	Payload string `msgpack:"payload"`
}

// outboxModule emits change events with payloads, as an outbox does.
func outboxModule() fsm.Module {
	emit := func(tx *fsm.Tx, cmd *log.Command) ([]uint64, error) {
		var c outboxCmd
		if err := fsm.DecodePayload(cmd.Payload, &c); err != nil {
			return nil, err
		}
		var seqs []uint64
		for i := range c.N {
			body := c.Payload
			if body == "" {
				body = fmt.Sprintf(`{"index":%d,"n":%d}`, tx.Index, i)
			}
			seq, err := tx.EmitPayload("outbox", fmt.Sprint(tx.Index), "t", []byte(body))
			if err != nil {
				return nil, err
			}
			seqs = append(seqs, seq)
		}
		return seqs, nil
	}
	return fsm.Module{Name: "outbox", Types: fsm.TypeRange{First: 900, Last: 999}, Commands: []fsm.CommandSpec{
		{Type: cmdOutbox, Name: "outbox", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			return emit(tx, cmd)
		}},
		{Type: cmdOutboxFail, Name: "outbox_fail", MaxVersion: 1, Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
			if _, err := emit(tx, cmd); err != nil {
				return nil, err
			}
			return nil, errs.New(errs.CodeConflict, "no")
		}},
	}}
}

// EmitPayload answers the sequence each event gets once committed, in a
// batch that shares one transaction as well as one by one; a failed
// command's events (and sequences) never exist; the payload reaches the
// feed as JSON.
func TestEmitPayloadSequences(t *testing.T) {
	batch := []*raft.Log{
		entry(t, 1, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a"}), // seq 1
		entry(t, 2, cmdOutbox, outboxCmd{N: 2}),                        // 2, 3
		entry(t, 3, cmdOutboxFail, outboxCmd{N: 1}),                    // none
		entry(t, 4, cmdOutbox, outboxCmd{N: 1}),                        // 4
		entry(t, 5, cmdOutbox, outboxCmd{N: 1, Payload: `[1]`}),        // not an object
		entry(t, 6, cmdOutbox, outboxCmd{N: 1, Payload: `{"a":` + strings.Repeat(" ", fsm.MaxEventPayload) + `1}`}),
		entry(t, 7, cmdOutbox, outboxCmd{N: 1, Payload: `{"a":1`}),
	}
	wantSeqs := [][]uint64{nil, {2, 3}, nil, {4}, nil, nil, nil}
	wantCodes := []errs.Code{"", "", errs.CodeConflict, "", errs.CodeInternal, errs.CodeInternal, errs.CodeInternal}
	for _, mode := range []string{"batch", "one by one"} {
		f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), outboxModule()}})
		if err != nil {
			t.Fatal(err)
		}
		var got []any
		if mode == "batch" {
			got = f.ApplyBatch(batch)
		} else {
			for _, l := range batch {
				got = append(got, f.Apply(l))
			}
		}
		for i, r := range got {
			res := r.(*fsm.Response)
			if errs.CodeOf(res.Err) != wantCodes[i] {
				t.Fatalf("%s: entry %d: %v, want %q", mode, i+1, res.Err, wantCodes[i])
			}
			if wantSeqs[i] == nil {
				continue
			}
			var seqs []uint64
			if err := log.Unmarshal(res.Result, &seqs); err != nil || !cmp.Equal(seqs, wantSeqs[i]) {
				t.Fatalf("%s: entry %d answered sequences %v (%v), want %v", mode, i+1, seqs, err, wantSeqs[i])
			}
		}
		page := mustChanges(t, localReader{f}, 0, 0)
		if len(page.Events) != 4 || page.LastSeq != 4 {
			t.Fatalf("%s: feed %+v, want 4 events", mode, page)
		}
		e := page.Events[2]
		if e.Seq != 3 || e.Index != 2 || string(e.Payload) != `{"index":2,"n":1}` || page.Events[0].Payload != nil {
			t.Fatalf("%s: events %+v", mode, page.Events)
		}
		raw, err := json.Marshal(e)
		if err != nil || !strings.Contains(string(raw), `"payload":{"index":2,"n":1}`) {
			t.Fatalf("%s: event as JSON: %s %v", mode, raw, err)
		}
		if raw, _ := json.Marshal(page.Events[0]); strings.Contains(string(raw), "payload") {
			t.Fatalf("%s: an event without payload shows one: %s", mode, raw)
		}
	}
}

// localReader reads an FSM as the trusted principal.
type localReader struct{ f *fsm.FSM }

func (r localReader) Query(_ context.Context, q fsm.Query) ([]byte, error) {
	return r.f.Query(identity.Principal{}, q)
}

// The content hash ignores what every command moves (index, FSM time)
// and sees every row: a refused command leaves it, a write changes it.
func TestContentHash(t *testing.T) {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), outboxModule()}})
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(entry(t, 1, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a"}))
	_, h1, err := f.StateHashes()
	if err != nil {
		t.Fatal(err)
	}
	if res := f.Apply(entry(t, 2, cmdOutboxFail, outboxCmd{N: 1})).(*fsm.Response); res.Err == nil {
		t.Fatal("the failing command succeeded")
	}
	_, h2, _ := f.StateHashes()
	if h2.Content != h1.Content || h2.State == h1.State {
		t.Fatalf("a refused command: content %x -> %x, state %x -> %x", h1.Content, h2.Content, h1.State, h2.State)
	}
	f.Apply(entry(t, 3, cmdOutbox, outboxCmd{N: 1}))
	h3, ok, err := f.StateHashesAt(context.Background(), 3)
	if err != nil || !ok || h3.Content == h2.Content {
		t.Fatalf("a write left the content hash (%t %v)", ok, err)
	}
	if _, sum, _ := f.StateHash(); sum != h3.State {
		t.Fatal("StateHash and StateHashesAt disagree")
	}
}

// The per-table hashes name what a command wrote: a node create without
// an idempotency key changes the nodes table's hash (and the bookkeeping
// and feed) and leaves the ledger's.
func TestTableHashesNameTheTableAWriteChanged(t *testing.T) {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), outboxModule()}})
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := log.Encode(log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: 1001, IdemScope: "nodes", IdemKey: "k1",
		Payload: log.MustMarshal(nodes.CreateCommand{NodeID: "a"})})
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: keyed})
	_, before, err := f.StateHashes()
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(entry(t, 3, nodes.CmdCreate, nodes.CreateCommand{NodeID: "b"}))
	_, after, err := f.StateHashes()
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for name, sum := range after.Tables {
		if before.Tables[name] != sum {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	if _, ok := after.Tables["idempotency"]; !ok || len(before.Tables) != len(after.Tables) {
		t.Fatalf("tables before %v, after %v: want the same, the ledger among them", before.Tables, after.Tables)
	}
	if want := []string{"changes", "meta", "nodes"}; !slices.Equal(changed, want) {
		t.Fatalf("tables whose hash changed: %v, want %v", changed, want)
	}
}
