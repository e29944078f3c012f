package fsm_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
)

// InspectSnapshot describes a stream by what a replica holding it would
// report (index, FSM time, state hash) and counts its rows, without
// touching the inspecting FSM's own state.
func TestInspectSnapshotDescribesTheStream(t *testing.T) {
	src := newLocal(t)
	createNode(t, src, "k1", "a", []string{"L"}, props("x", "1"))
	createNode(t, src, "", "b", nil, nil)
	proposeOK(t, src, fsm.CmdMemberUpsert, "", fsm.Member{ID: "n1", RaftAddr: "r1", APIAddr: "a1"})
	stream := fsmtest.Snapshot(t, src.FSM)
	index, sum := fsmtest.StateHash(t, src.FSM)

	inspector := targetState(t)
	before, applied := fsmtest.Snapshot(t, inspector), inspector.AppliedIndex()
	info, err := inspector.InspectSnapshot(bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("InspectSnapshot: %v", err)
	}
	assertUnchanged(t, inspector, before, applied)

	if info.Index != index || info.StateHash != hex.EncodeToString(sum[:]) || info.Bytes != int64(len(stream)) || info.Format != 1 {
		t.Fatalf("info %+v; want index %d, hash %x, %d bytes, format 1", info, index, sum, len(stream))
	}
	_, frames := splitSnapshot(t, stream)
	want := tableRows(t, frames)
	var total uint64
	for _, tr := range info.Tables {
		if uint64(want[tr.Name]) != tr.Rows {
			t.Errorf("table %s: %d rows reported, %d in the stream", tr.Name, tr.Rows, want[tr.Name])
		}
		total += tr.Rows
		delete(want, tr.Name)
	}
	if len(want) != 0 || total != info.Rows {
		t.Fatalf("tables not reported: %v; rows %d of %d", want, total, info.Rows)
	}
}

func TestInspectSnapshotRejectsDamage(t *testing.T) {
	src := newLocal(t)
	createNode(t, src, "", "a", nil, props("x", "1"))
	stream := fsmtest.Snapshot(t, src.FSM)
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"truncated": stream[:len(stream)-1],
		"flipped":   append(append([]byte{}, stream[:20]...), append([]byte{stream[20] ^ 1}, stream[21:]...)...),
		"appended":  append(append([]byte{}, stream...), 0),
	} {
		if _, err := newFSM(t).InspectSnapshot(bytes.NewReader(bad)); !errors.Is(err, fsm.ErrSnapshot) {
			t.Errorf("%s stream: err %v, want ErrSnapshot", name, err)
		}
	}
}

// A backup restored through PrepareRestore brings its data but keeps the
// cluster's members, never moves the index or the clock backwards, and
// expires every change-feed cursor issued before the restore.
func TestPrepareRestoreKeepsTheClusterAndMovesForward(t *testing.T) {
	backup := newLocal(t)
	createNode(t, backup, "k1", "from-backup", []string{"L"}, props("x", "1"))
	proposeOK(t, backup, fsm.CmdMemberUpsert, "", fsm.Member{ID: "old-host", RaftAddr: "r-old", APIAddr: "a-old"})
	stream := fsmtest.Snapshot(t, backup.FSM)
	backupIndex := backup.FSM.AppliedIndex()

	// The live cluster is further along in index, clock and feed.
	live := newLocal(t)
	live.Advance(time.Hour)
	proposeOK(t, live, fsm.CmdMemberUpsert, "", fsm.Member{ID: "live-1", RaftAddr: "r1", APIAddr: "a1"})
	createMany(t, live, "live-", 10)
	liveMeta := metaOf(t, live.FSM)
	feed := mustChanges(t, live, 0, 100)

	var out bytes.Buffer
	info, index, err := live.FSM.PrepareRestore(bytes.NewReader(stream), &out)
	if err != nil {
		t.Fatalf("PrepareRestore: %v", err)
	}
	if info.Index != backupIndex || info.Bytes != int64(len(stream)) {
		t.Fatalf("info describes index %d, %d bytes; the backup is at %d, %d bytes", info.Index, info.Bytes, backupIndex, len(stream))
	}
	restored := restoreFresh(t, out.Bytes())
	r := fsmReader{restored}

	if _, err := nodes.NewClient(nil, r).Get(bg, "from-backup", fsm.Stale); err != nil {
		t.Fatalf("backup's node after restore: %v", err)
	}
	if _, err := nodes.NewClient(nil, r).Get(bg, "live-0", fsm.Stale); errs.CodeOf(err) != errs.CodeNotFound {
		t.Fatalf("live node written after the backup: %v, want not_found", err)
	}
	var members []fsm.Member
	if err := fsm.Ask(bg, r, fsm.QueryMembers, true, nil, &members); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]fsm.Member{{ID: "live-1", RaftAddr: "r1", APIAddr: "a1"}}, members); diff != "" {
		t.Fatalf("members after restore (-live +got):\n%s", diff)
	}
	got := metaOf(t, restored)
	if got.index != liveMeta.index || got.now != liveMeta.now {
		t.Fatalf("restored index %d, clock %d; the live cluster was at %d, %d", got.index, got.now, liveMeta.index, liveMeta.now)
	}
	if index != liveMeta.index {
		t.Fatalf("PrepareRestore reports index %d, want the live %d", index, liveMeta.index)
	}
	if restored.AppliedIndex() != liveMeta.index {
		t.Fatalf("applied index %d after restore, want %d", restored.AppliedIndex(), liveMeta.index)
	}
	for _, after := range []uint64{0, feed.Next, feed.LastSeq} {
		_, err := changes(t, r, after, 10)
		if errs.CodeOf(err) != errs.CodeCursorExpired {
			t.Fatalf("cursor %d issued before the restore: %v, want cursor_expired", after, err)
		}
		// The error says where to resume.
		if d := errs.From(err).Detail; fmt.Sprint(d["last_seq"]) != fmt.Sprint(feed.LastSeq+1) {
			t.Errorf("cursor_expired detail %v, want last_seq %d", d, feed.LastSeq+1)
		}
	}
	// The feed restarts empty, one sequence past every one issued.
	if page := mustChanges(t, r, feed.LastSeq+1, 10); len(page.Events) != 0 || page.LastSeq != feed.LastSeq+1 {
		t.Fatalf("feed after restore: %d events, last seq %d; want none, %d", len(page.Events), page.LastSeq, feed.LastSeq+1)
	}

	// A backup ahead of the cluster keeps its own index and clock.
	ahead := newLocal(t)
	ahead.Advance(2 * time.Hour)
	createMany(t, ahead, "ahead-", 40)
	out.Reset()
	if _, _, err := live.FSM.PrepareRestore(bytes.NewReader(fsmtest.Snapshot(t, ahead.FSM)), &out); err != nil {
		t.Fatal(err)
	}
	if got, want := metaOf(t, restoreFresh(t, out.Bytes())), metaOf(t, ahead.FSM); got.index != want.index || got.now != want.now {
		t.Fatalf("restored index %d, clock %d; the backup ahead was at %d, %d", got.index, got.now, want.index, want.now)
	}

	// A bump moves the index further past the larger of the two, for a
	// cluster seeded from the backup of one that went on without it.
	out.Reset()
	_, index, err = live.FSM.PrepareRestoreWith(bytes.NewReader(stream), &out, fsm.RestoreOptions{BumpIndex: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if restored := restoreFresh(t, out.Bytes()); index != liveMeta.index+1000 || restored.AppliedIndex() != index {
		t.Fatalf("bumped by 1000: PrepareRestoreWith reports index %d, the restored state applied %d; want %d", index, restored.AppliedIndex(), liveMeta.index+1000)
	}
	out.Reset()
	_, _, err = live.FSM.PrepareRestoreWith(bytes.NewReader(stream), &out, fsm.RestoreOptions{BumpIndex: fsm.MaxBumpIndex + 1})
	if errs.CodeOf(err) != errs.CodeInvalid || out.Len() != 0 {
		t.Fatalf("a bump above MaxBumpIndex: %v, %d bytes written; want invalid, nothing", err, out.Len())
	}
	out.Reset()
	if _, index, err = live.FSM.PrepareRestoreWith(bytes.NewReader(stream), &out, fsm.RestoreOptions{BumpIndex: fsm.MaxBumpIndex}); err != nil || index != liveMeta.index+fsm.MaxBumpIndex {
		t.Fatalf("a bump of exactly MaxBumpIndex: index %d, %v", index, err)
	}

	// A backup whose index the bump would carry past MaxRestoredIndex is
	// refused: the index, and fences derived from it, stay far from
	// overflowing however often backups are restored and bumped.
	high, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	tickAt, err := log.Encode(log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(tick(0, 0, 0))})
	if err != nil {
		t.Fatal(err)
	}
	high.ApplyBatch([]*raft.Log{{Index: fsm.MaxRestoredIndex - 10, Type: raft.LogCommand, Data: tickAt}})
	highBackup := fsmtest.Snapshot(t, high)
	out.Reset()
	if _, index, err = live.FSM.PrepareRestoreWith(bytes.NewReader(highBackup), &out, fsm.RestoreOptions{BumpIndex: 10}); err != nil || index != fsm.MaxRestoredIndex {
		t.Fatalf("a bump up to MaxRestoredIndex: index %d, %v", index, err)
	}
	out.Reset()
	_, _, err = live.FSM.PrepareRestoreWith(bytes.NewReader(highBackup), &out, fsm.RestoreOptions{BumpIndex: 11})
	if errs.CodeOf(err) != errs.CodeInvalid || out.Len() != 0 {
		t.Fatalf("a bump past MaxRestoredIndex: %v, %d bytes written; want invalid, nothing", err, out.Len())
	}
}

func TestPrepareRestoreRejectsDamageAndWritesNothing(t *testing.T) {
	src := newLocal(t)
	createNode(t, src, "", "a", nil, nil)
	stream := fsmtest.Snapshot(t, src.FSM)
	live := targetState(t)
	before, applied := fsmtest.Snapshot(t, live), live.AppliedIndex()
	var out bytes.Buffer
	if _, _, err := live.PrepareRestore(bytes.NewReader(stream[:len(stream)-3]), &out); !errors.Is(err, fsm.ErrSnapshot) {
		t.Fatalf("truncated backup: %v, want ErrSnapshot", err)
	}
	if out.Len() != 0 {
		t.Fatalf("%d bytes written for a rejected backup", out.Len())
	}
	assertUnchanged(t, live, before, applied)
}

type metaView struct {
	index uint64
	now   int64
}

// metaOf reads the applied index and FSM time a replica's state holds.
func metaOf(t *testing.T, f *fsm.FSM) metaView {
	t.Helper()
	info, err := f.InspectSnapshot(bytes.NewReader(fsmtest.Snapshot(t, f)))
	if err != nil {
		t.Fatal(err)
	}
	return metaView{index: info.Index, now: info.FSMTimeMs}
}

// The data hash is what a restore keeps of a backup: the backup's (as
// InspectSnapshot and PrepareRestore report it) equals the restored
// state's, although members, feed, index and clock are the live
// cluster's and the state hashes differ; the source's own data hash
// equals it too, and a write changes it.
func TestDataHashSurvivesARestore(t *testing.T) {
	backup := newLocal(t)
	createNode(t, backup, "k1", "from-backup", []string{"L"}, props("x", "1"))
	proposeOK(t, backup, fsm.CmdMemberUpsert, "", fsm.Member{ID: "old-host", RaftAddr: "r-old", APIAddr: "a-old"})
	stream := fsmtest.Snapshot(t, backup.FSM)
	_, source, err := backup.FSM.StateHashes()
	if err != nil {
		t.Fatal(err)
	}
	inspected, err := backup.FSM.InspectSnapshot(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(source.Data[:]); inspected.DataHash != want {
		t.Fatalf("inspect: data hash %s, the source's is %s", inspected.DataHash, want)
	}

	live := newLocal(t)
	live.Advance(time.Hour)
	proposeOK(t, live, fsm.CmdMemberUpsert, "", fsm.Member{ID: "live-1", RaftAddr: "r1", APIAddr: "a1"})
	createMany(t, live, "live-", 3)
	var out bytes.Buffer
	info, _, err := live.FSM.PrepareRestore(bytes.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	restored := restoreFresh(t, out.Bytes())
	_, after, err := restored.StateHashes()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(after.Data[:]); got != inspected.DataHash || info.DataHash != inspected.DataHash {
		t.Fatalf("restored data hash %s, PrepareRestore says %s; the backup's is %s", got, info.DataHash, inspected.DataHash)
	}
	if after.State == source.State || after.Content == source.Content {
		t.Fatalf("the restored state and content hashes equal the source's: members and feed should differ")
	}
	createNode(t, backup, "k2", "after-backup", nil, props("x", "2"))
	if _, changed, _ := backup.FSM.StateHashes(); changed.Data == source.Data {
		t.Fatal("a write left the data hash as it was")
	}
}
