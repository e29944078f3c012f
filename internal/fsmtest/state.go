package fsmtest

import (
	"bytes"
	"io"

	"github.com/arbiterhq/arbiter/fsm"
)

// Fataler is what the helpers need; *testing.T and *rapid.T both have it.
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Snapshot returns f's snapshot stream.
func Snapshot(t Fataler, f *fsm.FSM) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f.WriteSnapshot(&buf); err != nil {
		t.Fatalf("WriteSnapshot: %v", err)
	}
	return buf.Bytes()
}

// RestoreFresh restores a snapshot stream into a new FSM with modules.
func RestoreFresh(t Fataler, b []byte, modules ...fsm.Module) *fsm.FSM {
	t.Helper()
	f, err := fsm.New(fsm.Config{Modules: modules})
	if err != nil {
		t.Fatalf("fsm.New: %v", err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return f
}

// StateHash is f's applied index and state hash.
func StateHash(t Fataler, f *fsm.FSM) (uint64, [32]byte) {
	t.Helper()
	idx, sum, err := f.StateHash()
	if err != nil {
		t.Fatalf("StateHash: %v", err)
	}
	return idx, sum
}

// AssertSameState fails unless a and b hold the same state: the same
// index and hash, the same snapshot bytes and the same clock.
func AssertSameState(t Fataler, a, b *fsm.FSM) {
	t.Helper()
	ia, ha := StateHash(t, a)
	ib, hb := StateHash(t, b)
	if ia != ib || ha != hb {
		t.Fatalf("state hash differs: index %d %x vs index %d %x", ia, ha, ib, hb)
	}
	if !bytes.Equal(Snapshot(t, a), Snapshot(t, b)) {
		t.Fatalf("snapshots differ with equal hashes")
	}
	if a.Now() != b.Now() {
		t.Fatalf("clocks differ: %d vs %d", a.Now(), b.Now())
	}
}
