package cluster

import (
	"io"
	"log/slog"
	"testing"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/hashicorp/raft"
)

// The watch reports a suffix truncation that reaches applied entries, and
// nothing else: not a compaction of applied entries from the front, not a
// suffix truncation of unapplied ones, not the whole log.
func TestTruncationWatchJudgesOnlyTruncationsOfAppliedEntries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max uint64
		reported bool
	}{
		{"compaction of applied entries", 1, 6, false},
		{"truncation of unapplied entries", 8, 10, false},
		{"truncation of applied entries", 7, 10, true},
		{"the whole log", 1, 10, false},
	} {
		w := newTruncationWatch(tenEntries(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := w.DeleteRange(tc.min, tc.max); err != nil || w.count.Load() != 0 {
			t.Fatalf("%s before raft runs: %v, %d reported", tc.name, err, w.count.Load())
		}
		store := tenEntries(t)
		w = newTruncationWatch(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		w.watch(func() uint64 { return 7 })
		if err := w.DeleteRange(tc.min, tc.max); err != nil {
			t.Fatal(err)
		}
		if got := w.count.Load() == 1; got != tc.reported {
			t.Errorf("%s [%d, %d] with 7 applied: reported %t, want %t", tc.name, tc.min, tc.max, got, tc.reported)
		}
		if first, _ := store.FirstIndex(); tc.min == 1 && tc.max < 10 && first != tc.max+1 {
			t.Errorf("%s: the store's first index is %d after the delete, want %d", tc.name, first, tc.max+1)
		}
	}
}

// tenEntries is a log store holding entries 1-10 of term 1.
func tenEntries(t *testing.T) *raft.InmemStore {
	t.Helper()
	store := raft.NewInmemStore()
	for i := uint64(1); i <= 10; i++ {
		if err := store.StoreLog(&raft.Log{Index: i, Term: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// TestRaftSeesTheWALAsMonotonic: raft-wal refuses an append that leaves a
// gap, so after installing a snapshot raft must empty it rather than
// leave a gap, which it does only for a store that says it is monotonic.
// Every wrapper between raft and the store (the log cache, the watch)
// must pass that on: a follower on the WAL that installs a snapshot
// could otherwise never append again.
func TestRaftSeesTheWALAsMonotonic(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		monotonic bool
	}{{logstore.WAL, true}, {logstore.Bolt, false}} {
		stores, err := logstore.Open(t.TempDir(), logstore.Options{Kind: tc.kind})
		if err != nil {
			t.Fatal(err)
		}
		w := newTruncationWatch(stores.Log, slog.New(slog.NewTextHandler(io.Discard, nil)))
		var asRaft raft.LogStore = w
		m, ok := asRaft.(raft.MonotonicLogStore)
		if got := ok && m.IsMonotonic(); got != tc.monotonic {
			t.Errorf("%s: raft sees monotonic %t, want %t", tc.kind, got, tc.monotonic)
		}
		if err := stores.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
