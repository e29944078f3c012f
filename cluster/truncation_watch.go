package cluster

import (
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// truncationWatch stands between raft and its log store and reports raft
// deleting, as a conflicting suffix, entries this node has already applied.
// Raft never truncates a committed entry, and a node applies only entries
// it believes committed; so a truncation that reaches back to the applied
// index means this node applied an entry the cluster never committed, and
// its state may no longer be the cluster's (the crash loop saw one replica
// of three hash differently after a leader was paused and replaced). The
// watch cannot undo that; it makes it loud, counted and attributable
// instead of a silent divergence.
//
// Raft deletes from its log in two ways: compaction, a prefix from the
// first index up to a snapshot (always applied entries), and conflict
// truncation, a suffix from the first conflicting index to the last. A
// delete that starts after the first index and runs to the last is a
// truncation; one that starts at the first index is a compaction, or, on a
// monotonic store after a snapshot install, the whole log (both
// legitimate), and is left alone.
type truncationWatch struct {
	raft.LogStore
	applied atomic.Pointer[func() uint64] // raft's applied index, once raft runs
	logger  *slog.Logger
	count   atomic.Uint64
}

func newTruncationWatch(s raft.LogStore, logger *slog.Logger) *truncationWatch {
	return &truncationWatch{LogStore: s, logger: logger}
}

// watch starts judging truncations against applied.
func (w *truncationWatch) watch(applied func() uint64) { w.applied.Store(&applied) }

// DeleteRange deletes [min, max], first reporting a truncation of applied
// entries.
func (w *truncationWatch) DeleteRange(min, max uint64) error {
	if f := w.applied.Load(); f != nil {
		if applied := (*f)(); min <= applied {
			first, errFirst := w.LogStore.FirstIndex()
			last, errLast := w.LogStore.LastIndex()
			if errFirst == nil && errLast == nil && min > first && max >= last {
				w.count.Add(1)
				w.logger.Error("raft truncated log entries this node had already applied: its state may differ from the cluster's",
					"from", min, "to", max, "applied_index", applied, "first_index", first)
			}
		}
	}
	return w.LogStore.DeleteRange(min, max)
}

// IsMonotonic passes on the store's answer: raft treats a monotonic store
// differently after a snapshot install.
func (w *truncationWatch) IsMonotonic() bool {
	m, ok := w.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// Truncations is how many times raft truncated entries this node had
// already applied (see truncationWatch); anything but 0 is a bug.
func (n *Node) Truncations() uint64 { return n.host.truncationCount() }
