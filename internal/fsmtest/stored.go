package fsmtest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Stored is an FSM's state as its snapshot stream holds it (the format of
// fsm/snapshot.go): what a domain's tests read to check the stored rows
// themselves, not only what its queries show.
type Stored struct {
	Index uint64 // the header's applied index
	Now   int64  // the header's FSM time
	// Rows are each table's rows, msgpack-encoded, in the stream's order.
	Rows map[string][][]byte
}

// snapshotMagic starts every snapshot stream; a SHA-256 of the stream
// ends it.
const snapshotMagic = "ARBSNAP\x01"

// ReadStored reads f's snapshot stream frame by frame: a header ('H'),
// then per table its name ('T') and its rows ('R').
func ReadStored(t Fataler, f *fsm.FSM) Stored {
	t.Helper()
	b := Snapshot(t, f)
	if len(b) < len(snapshotMagic)+sha256.Size || string(b[:len(snapshotMagic)]) != snapshotMagic {
		t.Fatalf("snapshot does not start with %q", snapshotMagic)
	}
	b = b[len(snapshotMagic) : len(b)-sha256.Size]
	st := Stored{Rows: map[string][][]byte{}}
	table := ""
	for len(b) > 0 {
		if len(b) < 5 {
			t.Fatalf("snapshot: a frame header of %d bytes", len(b))
		}
		kind, n := b[0], binary.BigEndian.Uint32(b[1:5])
		if uint64(len(b)-5) < uint64(n) {
			t.Fatalf("snapshot: a frame of %d bytes with %d left", n, len(b)-5)
		}
		body := b[5 : 5+n]
		b = b[5+n:]
		switch kind {
		case 'H':
			var h struct { // fsm's snapHeader; log.Unmarshal refuses unknown fields
				Format int      `msgpack:"format"`
				Index  uint64   `msgpack:"index"`
				Now    int64    `msgpack:"now"`
				Tables []string `msgpack:"tables"`
			}
			if err := log.Unmarshal(body, &h); err != nil {
				t.Fatalf("snapshot header: %v", err)
			}
			st.Index, st.Now = h.Index, h.Now
		case 'T':
			if err := log.Unmarshal(body, &table); err != nil {
				t.Fatalf("snapshot table frame: %v", err)
			}
		case 'R':
			st.Rows[table] = append(st.Rows[table], body)
		}
	}
	return st
}

// Rows decodes every row of table into a T, in the stream's order.
func Rows[T any](t Fataler, s Stored, table string) []T {
	t.Helper()
	out := make([]T, 0, len(s.Rows[table]))
	for _, body := range s.Rows[table] {
		var v T
		if err := log.Unmarshal(body, &v); err != nil {
			t.Fatalf("snapshot row of %s: %v", table, err)
		}
		out = append(out, v)
	}
	return out
}

// Digest hashes the rows of the tables keep selects: equal before and
// after a command exactly when it changed none of them.
func (s Stored) Digest(keep func(table string) bool) [32]byte {
	names := make([]string, 0, len(s.Rows))
	for name := range s.Rows {
		if keep(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(s.Rows[name]))
		for _, r := range s.Rows[name] {
			fmt.Fprintf(h, "%d\x00", len(r))
			h.Write(r)
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
