package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/log/store"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// snapshotOf writes data as a snapshot into a new data directory's store
// and returns the store, the snapshot's id and its state file.
func snapshotOf(t *testing.T, data []byte) (*store.Stores, string, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	sink, err := s.Snapshot.Create(raft.SnapshotVersionMax, 10, 2, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	return s, sink.ID(), filepath.Join(dir, "snapshots", sink.ID(), "state.bin")
}

// data is n bytes that are not all alike.
func data(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestSnapshotOpenReadsTheSnapshot: a snapshot of several read-ahead
// chunks reads back as written, with its meta, and ends in io.EOF.
func TestSnapshotOpenReadsTheSnapshot(t *testing.T) {
	want := data(3<<20 + 12345)
	s, id, _ := snapshotOf(t, want)
	meta, rc, err := s.Snapshot.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if meta.Index != 10 || meta.Term != 2 || meta.Size != int64(len(want)) {
		t.Fatalf("meta: %+v", meta)
	}
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
}

// TestSnapshotOpenLeavesTheCheckToTheRestore: Open no longer reads the
// whole file for its CRC before it returns (raft's Open refused a
// corrupt snapshot there); the FSM's restore refuses it instead, by the
// SHA-256 trailer of its stream, and changes nothing.
func TestSnapshotOpenLeavesTheCheckToTheRestore(t *testing.T) {
	src, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	var batch []*raft.Log
	for i := range 2000 {
		data, err := log.Encode(log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: int64(1000 + i),
			Payload: log.MustMarshal(nodes.CreateCommand{NodeID: fmt.Sprintf("n%04d", i)})})
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data})
	}
	src.ApplyBatch(batch)
	var stream bytes.Buffer
	if err := src.WriteSnapshot(&stream); err != nil {
		t.Fatal(err)
	}
	s, id, state := snapshotOf(t, stream.Bytes())
	corrupt := bytes.Clone(stream.Bytes())
	corrupt[len(corrupt)/2] ^= 1
	if err := os.WriteFile(state, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	_, rc, err := s.Snapshot.Open(id)
	if err != nil {
		t.Fatalf("Open read the whole file first: %v", err)
	}
	dst, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(rc); !errors.Is(err, fsm.ErrSnapshot) {
		t.Fatalf("restore of a corrupt snapshot: %v, want ErrSnapshot", err)
	}
	if dst.AppliedIndex() != 0 {
		t.Fatalf("the refused restore changed the state: applied index %d", dst.AppliedIndex())
	}
	if err := os.WriteFile(state, stream.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, rc, err = s.Snapshot.Open(id); err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(rc); err != nil || dst.AppliedIndex() != 2000 {
		t.Fatalf("restore of the intact snapshot: %v, applied index %d", err, dst.AppliedIndex())
	}
}

// TestSnapshotOpenCloseMidway: a reader closed before its end closes its
// file.
func TestSnapshotOpenCloseMidway(t *testing.T) {
	s, id, _ := snapshotOf(t, data(5<<20))
	_, rc, err := s.Snapshot.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotOpenRefusesAPath: an id is a snapshot's name, never a path
// out of the snapshots directory.
func TestSnapshotOpenRefusesAPath(t *testing.T) {
	s, _, _ := snapshotOf(t, data(10))
	for _, id := range []string{"", ".", "..", "../x", "a/b"} {
		if _, _, err := s.Snapshot.Open(id); err == nil {
			t.Errorf("Open(%q) succeeded", id)
		}
	}
}
