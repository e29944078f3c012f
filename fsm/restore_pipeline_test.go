package fsm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	memdb "github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
)

// brittleRow encodes as any row and panics when it is decoded: a module
// decoder with a bug that a hostile snapshot row reaches.
type brittleRow struct {
	ID string `msgpack:"id"`
}

func (*brittleRow) DecodeMsgpack(*msgpack.Decoder) error { panic("decoder bug") }

const cmdBrittle log.Type = 902

func brittle() fsm.Module {
	return fsm.Module{
		Name:  "brittle",
		Types: fsm.TypeRange{First: 900, Last: 999}, // left to tests
		Tables: []fsm.Table{{New: func() any { return new(brittleRow) }, Schema: &memdb.TableSchema{
			Name:    "brittle",
			Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}}},
		}}},
		Commands: []fsm.CommandSpec{{Type: cmdBrittle, Name: "brittle_insert", MaxVersion: 1,
			Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
				return nil, tx.Insert("brittle", &brittleRow{ID: fmt.Sprint(tx.Index)})
			}}},
	}
}

// TestRestoreRefusesARowWhoseDecoderPanics: rows are decoded on other
// goroutines than Restore's; a decoder's panic there is an ErrSnapshot
// refusal that changes nothing, not a crash of the process.
func TestRestoreRefusesARowWhoseDecoderPanics(t *testing.T) {
	newBrittle := func() *fsm.FSM {
		f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), brittle()}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	src := newBrittle()
	var batch []*raft.Log
	for i := range 600 { // more rows than one batch, before and after the brittle table
		batch = append(batch, entry(t, uint64(i+1), nodes.CmdCreate, nodes.CreateCommand{NodeID: fmt.Sprintf("n%03d", i)}))
	}
	batch = append(batch, entry(t, 601, cmdBrittle, struct{}{}))
	src.ApplyBatch(batch)
	stream := fsmtest.Snapshot(t, src)

	dst := newBrittle()
	dst.ApplyBatch([]*raft.Log{entry(t, 1, nodes.CmdCreate, nodes.CreateCommand{NodeID: "kept"})})
	before := fsmtest.Snapshot(t, dst)
	err := restore(dst, stream)
	if !errors.Is(err, fsm.ErrSnapshot) || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("restore of a row whose decoder panics: %v", err)
	}
	if after := fsmtest.Snapshot(t, dst); string(after) != string(before) {
		t.Fatal("the refused restore changed the state")
	}
}

// unencodableRow panics when it is encoded: a module row type with a bug.
type unencodableRow struct {
	ID string `msgpack:"id"`
}

func (*unencodableRow) EncodeMsgpack(*msgpack.Encoder) error { panic("encoder bug") }

// TestSnapshotOfARowWhoseEncoderPanicsFails: rows are encoded on other
// goroutines than WriteSnapshot's; an encoder's panic there fails the
// snapshot with an error instead of crashing the process.
func TestSnapshotOfARowWhoseEncoderPanicsFails(t *testing.T) {
	m := brittle()
	m.Tables[0].New = func() any { return new(unencodableRow) }
	m.Commands[0].Apply = func(tx *fsm.Tx, cmd *log.Command) (any, error) {
		return nil, tx.Insert("brittle", &unencodableRow{ID: fmt.Sprint(tx.Index)})
	}
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), m}})
	if err != nil {
		t.Fatal(err)
	}
	f.ApplyBatch([]*raft.Log{entry(t, 1, cmdBrittle, struct{}{})})
	if err := f.WriteSnapshot(io.Discard); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("snapshot of a row whose encoder panics: %v", err)
	}
}

// TestSnapshotRowsSurviveBufferReuse: a snapshot encodes each batch of
// rows into one buffer and fills written buffers again. Every row of a
// state of many batches, of sizes from a few bytes to batches too large
// to keep for reuse, reads back from the stream as it was created, in
// key order: a buffer handed back before its frames were written, or
// written twice, would show here as a wrong or repeated row.
func TestSnapshotRowsSurviveBufferReuse(t *testing.T) {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	const count = 4000
	value := func(i int) string {
		if i >= 1000 && i < 1400 { // about 3 MiB in a row: batches not kept
			return strings.Repeat("v", 8000+i)
		}
		return strings.Repeat(string(rune('a'+i%26)), (i*37)%3000)
	}
	var batch []*raft.Log
	for i := range count {
		props := map[string]json.RawMessage{"value": json.RawMessage(strconv.Quote(value(i)))}
		batch = append(batch, entry(t, uint64(i+1), nodes.CmdCreate, nodes.CreateCommand{
			NodeID: fmt.Sprintf("n%05d", i), Labels: []string{fmt.Sprintf("l%d", i%7)}, Properties: props}))
		if len(batch) == 64 {
			f.ApplyBatch(batch)
			batch = batch[:0]
		}
	}
	f.ApplyBatch(batch)

	type row struct {
		NodeID        string            `msgpack:"node_id"`
		Labels        []string          `msgpack:"labels"`
		Properties    map[string]string `msgpack:"properties"`
		Version       uint64            `msgpack:"version"`
		CreatedIndex  uint64            `msgpack:"created_index"`
		ModifiedIndex uint64            `msgpack:"modified_index"`
	}
	stored := fsmtest.ReadStored(t, f)
	rows := fsmtest.Rows[row](t, stored, "nodes")
	if len(rows) != count {
		t.Fatalf("%d node rows in the stream, want %d", len(rows), count)
	}
	for i, r := range rows {
		id := fmt.Sprintf("n%05d", i)
		var v string
		if err := json.Unmarshal([]byte(r.Properties["value"]), &v); err != nil {
			t.Fatalf("row %d: value %q: %v", i, r.Properties["value"], err)
		}
		if r.NodeID != id || v != value(i) || r.CreatedIndex != uint64(i+1) || len(r.Labels) != 1 || r.Labels[0] != fmt.Sprintf("l%d", i%7) {
			t.Fatalf("row %d: node %q created at %d, labels %v, value of %d bytes; want %q created at %d with a value of %d bytes",
				i, r.NodeID, r.CreatedIndex, r.Labels, len(v), id, i+1, len(value(i)))
		}
	}
	if n := len(stored.Rows["node_labels"]); n != count {
		t.Fatalf("%d label rows, want %d", n, count)
	}
	// The stream restores, and the copy writes the same bytes.
	again := fsmtest.RestoreFresh(t, fsmtest.Snapshot(t, f), nodes.Module())
	fsmtest.AssertSameState(t, f, again)
}

// plainRow has no direct decoder: msgpack decodes it by reflection, as it
// does the rows of every module without one.
type plainRow struct {
	ID    string            `msgpack:"id"`
	Blob  []byte            `msgpack:"blob"`
	Raw   json.RawMessage   `msgpack:"raw"`
	Tags  []string          `msgpack:"tags"`
	Attrs map[string]string `msgpack:"attrs"`
}

const cmdPlain log.Type = 903

func plain() fsm.Module {
	return fsm.Module{
		Name:  "plain",
		Types: fsm.TypeRange{First: 900, Last: 999}, // left to tests
		Tables: []fsm.Table{{New: func() any { return new(plainRow) }, Schema: &memdb.TableSchema{
			Name:    "plain",
			Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}}},
		}}},
		Commands: []fsm.CommandSpec{{Type: cmdPlain, Name: "plain_insert", MaxVersion: 1,
			Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
				i := tx.Index
				s := strings.Repeat(string(rune('a'+i%26)), int(i*53%900))
				return nil, tx.Insert("plain", &plainRow{ID: fmt.Sprintf("p%05d", i), Blob: []byte(s),
					Raw: json.RawMessage(strconv.Quote(s)), Tags: []string{s, fmt.Sprint(i)}, Attrs: map[string]string{s: fmt.Sprint(i)}})
			}}},
	}
}

// TestRestoredRowsOwnTheirBytes: a restore reads each batch of row frames
// into one buffer and hands a decoded batch's buffer to a later batch, so
// every decoder must copy what a row keeps. Rows decoded directly (nodes)
// and by reflection (plainRow) over many batches, of sizes that fill
// buffers and overflow them, must restore to the very state they came
// from: a row holding bytes of a reused buffer would hold a later row's.
func TestRestoredRowsOwnTheirBytes(t *testing.T) {
	src, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module(), plain()}})
	if err != nil {
		t.Fatal(err)
	}
	var batch []*raft.Log
	for i := range 3000 {
		index := uint64(i + 1)
		if i%2 == 0 {
			batch = append(batch, entry(t, index, cmdPlain, struct{}{}))
		} else {
			value := strings.Repeat(string(rune('A'+i%26)), i*31%1200)
			batch = append(batch, entry(t, index, nodes.CmdCreate, nodes.CreateCommand{NodeID: fmt.Sprintf("n%05d", i),
				Labels: []string{fmt.Sprintf("l%d", i%9)}, Properties: map[string]json.RawMessage{fmt.Sprintf("k%d", i%5): json.RawMessage(strconv.Quote(value))}}))
		}
		if len(batch) == 64 {
			src.ApplyBatch(batch)
			batch = batch[:0]
		}
	}
	src.ApplyBatch(batch)
	stored := fsmtest.ReadStored(t, src)
	if p, n := len(stored.Rows["plain"]), len(stored.Rows["nodes"]); p != 1500 || n != 1500 {
		t.Fatalf("%d plain rows and %d nodes, want 1500 of each", p, n)
	}
	again := fsmtest.RestoreFresh(t, fsmtest.Snapshot(t, src), nodes.Module(), plain())
	fsmtest.AssertSameState(t, src, again)
}
