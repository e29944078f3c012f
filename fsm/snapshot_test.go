package fsm_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
)

// These tests and helpers read the snapshot stream as fsm/snapshot.go
// documents it (format 1): an 8-byte magic, frames of {kind byte, uint32
// big-endian length, msgpack body}, then a SHA-256 trailer over everything
// before it. Splitting and re-joining streams lets a test build a stream
// whose checksum is right and which is wrong in exactly one way, so that a
// rejection is known to come from the defect under test.

const (
	magicLen   = 8
	trailerLen = sha256.Size
	metaTable  = "meta" // the FSM bookkeeping table, as named in the stream
)

type frame struct {
	kind byte
	body []byte
}

func restore(f *fsm.FSM, b []byte) error {
	return f.Restore(io.NopCloser(bytes.NewReader(b)))
}

// restoreFresh restores b into a new FSM.
func restoreFresh(t fataler, b []byte) *fsm.FSM {
	t.Helper()
	f := newFSM(t)
	if err := restore(f, b); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return f
}

// splitSnapshot parses a well-formed stream into its magic and frames; the
// trailer is dropped.
func splitSnapshot(t fataler, b []byte) ([]byte, []frame) {
	t.Helper()
	if len(b) < magicLen+trailerLen {
		t.Fatalf("snapshot of %d bytes is too short", len(b))
	}
	magic, rest := b[:magicLen], b[magicLen:len(b)-trailerLen]
	var frames []frame
	for len(rest) > 0 {
		if len(rest) < 5 {
			t.Fatalf("truncated frame header")
		}
		n := binary.BigEndian.Uint32(rest[1:5])
		if uint64(len(rest)-5) < uint64(n) {
			t.Fatalf("truncated frame body")
		}
		frames = append(frames, frame{kind: rest[0], body: rest[5 : 5+n]})
		rest = rest[5+n:]
	}
	return magic, frames
}

// joinSnapshot writes magic and frames and appends the correct trailer.
func joinSnapshot(magic []byte, frames []frame) []byte {
	var buf bytes.Buffer
	buf.Write(magic)
	for _, fr := range frames {
		var hdr [5]byte
		hdr[0] = fr.kind
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(fr.body)))
		buf.Write(hdr[:])
		buf.Write(fr.body)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes()
}

// decodeMap decodes a frame body into a generic map.
func decodeMap(t fataler, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := log.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode frame body: %v", err)
	}
	return m
}

// editMap decodes a frame body as a map, lets edit change it and re-encodes.
func editMap(t fataler, body []byte, edit func(map[string]any)) []byte {
	t.Helper()
	m := decodeMap(t, body)
	edit(m)
	return log.MustMarshal(m)
}

// tableRows returns, for each table in the stream, how many rows it holds.
func tableRows(t fataler, frames []frame) map[string]int {
	t.Helper()
	out := map[string]int{}
	table := ""
	for _, fr := range frames {
		switch fr.kind {
		case 'T':
			if err := log.Unmarshal(fr.body, &table); err != nil {
				t.Fatalf("table frame: %v", err)
			}
			out[table] = 0
		case 'R':
			out[table]++
		}
	}
	return out
}

// stateWithoutClock returns f's snapshot frames with the applied index and
// the FSM clock taken out of the header and the meta row. What remains is
// everything a log entry may change only by succeeding: every entry, even a
// refused one, moves the index, and every decodable one may move the clock.
func stateWithoutClock(t fataler, f *fsm.FSM) []frame {
	t.Helper()
	_, frames := splitSnapshot(t, fsmtest.Snapshot(t, f))
	table, metaRows := "", 0
	drop := func(m map[string]any) { delete(m, "index"); delete(m, "now") }
	for i, fr := range frames {
		switch {
		case fr.kind == 'H':
			frames[i].body = editMap(t, fr.body, drop)
		case fr.kind == 'T':
			if err := log.Unmarshal(fr.body, &table); err != nil {
				t.Fatalf("table frame: %v", err)
			}
		case fr.kind == 'R' && table == metaTable:
			frames[i].body = editMap(t, fr.body, drop)
			metaRows++
		}
	}
	if metaRows != 1 {
		t.Fatalf("snapshot has %d meta rows, want 1", metaRows)
	}
	return frames
}

var frameCmp = cmp.AllowUnexported(frame{})

// TestCraftedStreamControl proves the helpers above: re-joining the frames
// of a real snapshot gives the same bytes, and that stream restores. Every
// rejection below is therefore caused by its one edit.
func TestCraftedStreamControl(t *testing.T) {
	b := fsmtest.Snapshot(t, richLocal(t).FSM)
	magic, frames := splitSnapshot(t, b)
	if again := joinSnapshot(magic, frames); !bytes.Equal(again, b) {
		t.Fatal("split and join changed the stream")
	}
	restoreFresh(t, b)
	for table, n := range tableRows(t, frames) {
		if n == 0 {
			t.Errorf("rich state has no rows in table %s; the snapshot tests would not cover it", table)
		}
	}
}

func TestRestoreRejects(t *testing.T) {
	good := fsmtest.Snapshot(t, richLocal(t).FSM)
	magic, frames := splitSnapshot(t, good)

	// index of the first frame of the given kind (and, for 'R', of the
	// first row of a table).
	find := func(kind byte, table string) int {
		cur := ""
		for i, fr := range frames {
			if fr.kind == 'T' {
				if err := log.Unmarshal(fr.body, &cur); err != nil {
					t.Fatal(err)
				}
			}
			if fr.kind == kind && (table == "" || cur == table) {
				return i
			}
		}
		t.Fatalf("no frame %q in table %q", kind, table)
		return -1
	}
	// edited returns a copy of frames where frame i is replaced by fr, or
	// removed when fr is nil.
	edited := func(i int, fr *frame) []frame {
		out := append([]frame{}, frames[:i]...)
		if fr != nil {
			out = append(out, *fr)
		}
		return append(out, frames[i+1:]...)
	}
	hdrIdx, endIdx := find('H', ""), find('E', "")
	var rowCount uint64
	if err := log.Unmarshal(frames[endIdx].body, &rowCount); err != nil {
		t.Fatal(err)
	}
	header := func(edit func(map[string]any)) []frame {
		return edited(hdrIdx, &frame{'H', editMap(t, frames[hdrIdx].body, edit)})
	}
	count := func(n uint64) *frame { return &frame{'E', log.MustMarshal(n)} }
	nodeRow := find('R', "nodes")
	metaRow := find('R', metaTable)
	firstTable := find('T', "")
	// The meta row removed and the row count fixed to match.
	withoutMeta := edited(metaRow, nil)
	withoutMeta[len(withoutMeta)-1] = *count(rowCount - 1)

	cases := []struct {
		name   string
		stream []byte
	}{
		{"empty", nil},
		{"magic only", good[:magicLen]},
		{"wrong magic", joinSnapshot([]byte("ARBSNAQ\x01"), frames)},
		{"magic of another version", joinSnapshot([]byte("ARBSNAP\x02"), frames)},
		{"unknown format", joinSnapshot(magic, header(func(m map[string]any) { m["format"] = 2 }))},
		{"header missing", joinSnapshot(magic, frames[1:])},
		{"header with unknown field", joinSnapshot(magic, header(func(m map[string]any) { m["extra"] = 1 }))},
		{"unknown table", joinSnapshot(magic, append(header(func(m map[string]any) {
			m["tables"] = append(m["tables"].([]any), "zz_unknown")
		})[:endIdx], frame{'T', log.MustMarshal("zz_unknown")}, frames[endIdx]))},
		{"table other than announced", joinSnapshot(magic, edited(firstTable, &frame{'T', log.MustMarshal("zz_other")}))},
		{"row with unknown field", joinSnapshot(magic, edited(nodeRow, &frame{'R', editMap(t, frames[nodeRow].body, func(m map[string]any) { m["extra"] = true })}))},
		{"row of another table's type", joinSnapshot(magic, edited(nodeRow, &frame{'R', frames[metaRow].body}))},
		{"row count too high", joinSnapshot(magic, edited(endIdx, count(rowCount+1)))},
		{"row count too low", joinSnapshot(magic, edited(endIdx, count(rowCount-1)))},
		{"row count missing", joinSnapshot(magic, edited(endIdx, nil))},
		{"meta row missing", joinSnapshot(magic, withoutMeta)},
		{"header index disagrees with meta", joinSnapshot(magic, header(func(m map[string]any) { m["index"] = 1 }))},
		{"header clock disagrees with meta", joinSnapshot(magic, header(func(m map[string]any) { m["now"] = 1 }))},
		{"frame longer than the bound", append(append([]byte{}, good[:magicLen]...), 'H', 0xff, 0xff, 0xff, 0xff)},
		{"data after trailer", append(append([]byte{}, good...), 0)},
		{"frame after trailer", append(append([]byte{}, good...), good[magicLen:magicLen+5+len(frames[0].body)]...)},
		{"trailer missing", good[:len(good)-trailerLen]},
		{"trailer wrong", append(append([]byte{}, good[:len(good)-1]...), good[len(good)-1]^0xff)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := targetState(t)
			before := fsmtest.Snapshot(t, target)
			applied := target.AppliedIndex()
			err := restore(target, tc.stream)
			if !errors.Is(err, fsm.ErrSnapshot) {
				t.Fatalf("Restore = %v, want ErrSnapshot", err)
			}
			assertUnchanged(t, target, before, applied)
		})
	}
}

// TestRestoreRejectsEveryTruncationAndFlip cuts the stream at every length
// and flips every byte: each must be refused and leave the target as it
// was. A small state keeps this exhaustive yet quick.
func TestRestoreRejectsEveryTruncationAndFlip(t *testing.T) {
	l := newLocal(t)
	createNode(t, l, "", "a", []string{"L"}, props("owner", `"p1"`))
	proposeOK(t, l, fsm.CmdMemberUpsert, "", fsm.Member{ID: "n1", RaftAddr: "r:1", APIAddr: "h:1"})
	good := fsmtest.Snapshot(t, l.FSM)

	target := targetState(t)
	before := fsmtest.Snapshot(t, target)
	applied := target.AppliedIndex()
	for n := 0; n < len(good); n++ {
		if err := restore(target, good[:n]); !errors.Is(err, fsm.ErrSnapshot) {
			t.Fatalf("stream cut to %d of %d bytes: Restore = %v, want ErrSnapshot", n, len(good), err)
		}
	}
	assertUnchanged(t, target, before, applied)
	for i := range good {
		for _, mask := range []byte{0x01, 0x80} {
			b := bytes.Clone(good)
			b[i] ^= mask
			if err := restore(target, b); !errors.Is(err, fsm.ErrSnapshot) {
				t.Fatalf("byte %d ^ %#x: Restore = %v, want ErrSnapshot", i, mask, err)
			}
		}
	}
	assertUnchanged(t, target, before, applied)
	// The unmodified stream still restores: the loop above did not pass
	// because the target refuses everything.
	if err := restore(target, good); err != nil {
		t.Fatalf("good stream: %v", err)
	}
	if !bytes.Equal(fsmtest.Snapshot(t, target), good) {
		t.Fatal("restored state does not snapshot to the stream it came from")
	}
}

// targetState is the FSM a bad restore is aimed at: its own small state,
// different from every stream above, so that "unchanged" is observable.
func targetState(t fataler) *fsm.FSM {
	t.Helper()
	l := newLocal(t)
	createNode(t, l, "", "target", []string{"T"}, props("x", "1"))
	return l.FSM
}

func assertUnchanged(t *testing.T, f *fsm.FSM, before []byte, applied uint64) {
	t.Helper()
	if f.AppliedIndex() != applied {
		t.Fatalf("applied index moved from %d to %d", applied, f.AppliedIndex())
	}
	if !bytes.Equal(fsmtest.Snapshot(t, f), before) {
		t.Fatal("a rejected restore changed the state")
	}
	if idx, sum := fsmtest.StateHash(t, f); idx != applied || !bytes.Equal(sum[:], before[len(before)-trailerLen:]) {
		t.Fatalf("state hash at %d changed by a rejected restore", idx)
	}
	if _, err := nodes.NewClient(nil, fsmReader{f}).Get(bg, "target", fsm.Stale); err != nil {
		t.Fatalf("node of the old state unreadable after a rejected restore: %v", err)
	}
}

// memSink is a raft.SnapshotSink in memory; failAfter > 0 makes writes
// fail once that many bytes were taken.
type memSink struct {
	bytes.Buffer
	failAfter         int
	closed, cancelled bool
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.Len()+len(p) > s.failAfter {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

// TestSnapshotIsPointInTime: raft's Snapshot captures the state when it is
// called; Persist, which raft runs while Apply goes on, writes exactly that
// state (the same stream WriteSnapshot gave then), and closes the sink. A
// failing sink is cancelled, not closed.
func TestSnapshotIsPointInTime(t *testing.T) {
	l := richLocal(t)
	want := fsmtest.Snapshot(t, l.FSM)
	ss, err := l.FSM.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Release()
	createNode(t, l, "", "later", []string{"L1"}, nil)
	proposeOK(t, l, fsm.CmdMemberRemove, "", fsm.Member{ID: "n1"})

	sink := &memSink{}
	if err := ss.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !bytes.Equal(sink.Bytes(), want) {
		t.Fatal("Persist wrote a state other than the one captured")
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v, want closed only", sink.closed, sink.cancelled)
	}

	broken := &memSink{failAfter: len(want) / 2}
	if err := ss.Persist(broken); err == nil {
		t.Fatal("Persist into a failing sink succeeded")
	}
	if broken.closed || !broken.cancelled {
		t.Fatalf("failing sink closed=%v cancelled=%v, want cancelled only", broken.closed, broken.cancelled)
	}
}

var _ raft.SnapshotSink = (*memSink)(nil)

// A snapshot behind the applied index is restored (raft decides what to
// install) but counted: replicas must never move back in time unnoticed.
func TestRestoreBehindAppliedIndexIsCounted(t *testing.T) {
	l := newLocal(t)
	createNode(t, l, "", "a", nil, nil)
	older := fsmtest.Snapshot(t, l.FSM)
	createNode(t, l, "", "b", nil, nil)
	newer := fsmtest.Snapshot(t, l.FSM)

	f := newFSM(t)
	for _, s := range [][]byte{older, newer} {
		if err := restore(f, s); err != nil {
			t.Fatal(err)
		}
	}
	if f.Rewinds() != 0 {
		t.Fatalf("restores moving forward counted %d rewinds", f.Rewinds())
	}
	if err := restore(f, older); err != nil {
		t.Fatal(err)
	}
	if f.Rewinds() != 1 || !bytes.Equal(fsmtest.Snapshot(t, f), older) {
		t.Fatalf("after restoring the older snapshot: %d rewinds, state older: %v", f.Rewinds(), bytes.Equal(fsmtest.Snapshot(t, f), older))
	}
}

// The clock a restored FSM answers is the restored state's, not the one
// it had before: Now is kept apart from the state (FSM.now) and must be
// installed with it.
func TestRestoreInstallsTheClock(t *testing.T) {
	l := richLocal(t)
	if l.FSM.Now() == 0 {
		t.Fatal("the source state's clock never moved: nothing to compare")
	}
	f := restoreFresh(t, fsmtest.Snapshot(t, l.FSM))
	if f.Now() != l.FSM.Now() {
		t.Fatalf("restored clock %d, the snapshot's state %d", f.Now(), l.FSM.Now())
	}
}
