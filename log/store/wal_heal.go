package store

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/coreos/etcd/pkg/fileutil"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/types"
)

// healingWAL is raft-wal (v0.4.1; v0.4.2 changes only its metrics) with
// two repairs.
//
// Compacted entries are not found. raft-wal drops a compacted prefix a
// whole segment at a time, and its GetLog still returns the entries of a
// segment it kept that lie below FirstIndex. raft's leader then sends
// those entries instead of a snapshot to a follower whose log starts
// later (one that installed a snapshot): the follower cannot find the
// entry before them, refuses, and is sent the same again, for good (seen
// in the fault harness over TCP: the follower never caught up, and a
// configuration change waiting for it never committed). GetLog answers
// raft.ErrLogNotFound below FirstIndex, as raft-boltdb does.
//
// A failed rotation is undone. raft-wal rotates to a
// new segment in the background once the tail fills, committing the new
// segment to its meta store first and creating (preallocating) the file
// after. When that creation fails (a full disk: ENOSPC preallocating the
// file) it logs "rotate error" and keeps the old, sealed tail in memory;
// from then on every append fails with types.ErrSealed, for good, even
// once space returns. A leader then wins every election and steps down at
// once, its first entry unwritable. Opening the directory again recovers
// (it finds the new segment in the meta store and creates or recovers the
// file), so on ErrSealed this wrapper reopens the WAL and writes again.
//
// It reopens only when a file of a segment's size can be preallocated in
// the directory: while the disk is still full, the append fails as before
// (raft steps down or refuses the entries, nothing is acknowledged) and
// the next one tries again. Reads are never interrupted except for the
// moment of the reopen itself, which holds the lock every call takes.
type healingWAL struct {
	path        string
	segmentSize int
	open        func() (*wal.WAL, *metadb.BoltMetaDB, error)

	mu   sync.RWMutex
	w    *wal.WAL
	meta *metadb.BoltMetaDB
	// broken is set when a reopen failed: every call returns it until a
	// later append reopens the WAL.
	broken error
}

// errWALClosed is what every call of a closed healingWAL returns.
var errWALClosed = errors.New("log: the WAL is closed")

func newHealingWAL(path string, segmentSize int, open func() (*wal.WAL, *metadb.BoltMetaDB, error)) (*healingWAL, error) {
	w, meta, err := open()
	if err != nil {
		return nil, err
	}
	return &healingWAL{path: path, segmentSize: segmentSize, open: open, w: w, meta: meta}, nil
}

// with runs f on the open WAL, under the read lock a reopen waits for,
// or returns why there is none.
func with[T any](h *healingWAL, f func(*wal.WAL) (T, error)) (T, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.w == nil {
		var zero T
		return zero, h.broken
	}
	return f(h.w)
}

// do is with for calls that return only an error.
func (h *healingWAL) do(f func(*wal.WAL) error) error {
	_, err := with(h, func(w *wal.WAL) (struct{}, error) { return struct{}{}, f(w) })
	return err
}

func (h *healingWAL) FirstIndex() (uint64, error) {
	return with(h, func(w *wal.WAL) (uint64, error) { return w.FirstIndex() })
}

func (h *healingWAL) LastIndex() (uint64, error) {
	return with(h, func(w *wal.WAL) (uint64, error) { return w.LastIndex() })
}

// GetLog reads entry index, which must not be below FirstIndex. The
// first index is read after the entry: it never decreases, so an entry
// compacted before or during the read is caught.
func (h *healingWAL) GetLog(index uint64, l *raft.Log) error {
	return h.do(func(w *wal.WAL) error {
		if err := w.GetLog(index, l); err != nil {
			return err
		}
		first, err := w.FirstIndex()
		if err != nil {
			return err
		}
		if index < first {
			*l = raft.Log{}
			return raft.ErrLogNotFound
		}
		return nil
	})
}

func (h *healingWAL) StoreLog(l *raft.Log) error { return h.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends, reopening the WAL once if it is stuck on a sealed
// segment (see healingWAL).
func (h *healingWAL) StoreLogs(logs []*raft.Log) error {
	err := h.storeLogs(logs)
	if err == nil || !(errors.Is(err, types.ErrSealed) || h.isBroken()) {
		return err
	}
	if herr := h.heal(err); herr != nil {
		return herr
	}
	return h.storeLogs(logs)
}

func (h *healingWAL) storeLogs(logs []*raft.Log) error {
	return h.do(func(w *wal.WAL) error { return w.StoreLogs(logs) })
}

func (h *healingWAL) isBroken() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.w == nil && h.broken != nil && !errors.Is(h.broken, errWALClosed)
}

// heal reopens the WAL after cause, if a new segment fits on the disk.
func (h *healingWAL) heal(cause error) error {
	if err := h.probeSegmentSpace(); err != nil {
		return fmt.Errorf("%w (the WAL could not start a new segment and cannot until %d bytes are free: %v)", cause, h.segmentSize, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if errors.Is(h.broken, errWALClosed) {
		return h.broken
	}
	if h.w != nil {
		h.broken = errors.Join(h.w.Close(), h.meta.Close())
		h.w, h.meta = nil, nil
		if h.broken != nil {
			h.broken = fmt.Errorf("log: close the WAL to reopen it after %v: %w", cause, h.broken)
			return h.broken
		}
	}
	w, meta, err := h.open()
	if err != nil {
		h.broken = fmt.Errorf("log: reopen the WAL after %v: %w", cause, err)
		return h.broken
	}
	h.w, h.meta, h.broken = w, meta, nil
	return nil
}

// probeSegmentSpace preallocates, then removes, a file of a segment's
// size next to the segments: whether the segment a reopen may create fits.
func (h *healingWAL) probeSegmentSpace() error {
	f, err := os.CreateTemp(h.path, ".space-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	defer os.Remove(name)
	defer f.Close()
	// The call raft-wal's file system makes to preallocate a segment.
	return fileutil.Preallocate(f, int64(h.segmentSize), true)
}

func (h *healingWAL) DeleteRange(min, max uint64) error {
	return h.do(func(w *wal.WAL) error { return w.DeleteRange(min, max) })
}

func (h *healingWAL) Set(key, val []byte) error {
	return h.do(func(w *wal.WAL) error { return w.Set(key, val) })
}

func (h *healingWAL) Get(key []byte) ([]byte, error) {
	return with(h, func(w *wal.WAL) ([]byte, error) { return w.Get(key) })
}

func (h *healingWAL) SetUint64(key []byte, val uint64) error {
	return h.do(func(w *wal.WAL) error { return w.SetUint64(key, val) })
}

func (h *healingWAL) GetUint64(key []byte) (uint64, error) {
	return with(h, func(w *wal.WAL) (uint64, error) { return w.GetUint64(key) })
}

// IsMonotonic tells raft that this store cannot hold a gap: after it
// installs a snapshot, raft deletes the whole log (raft.MonotonicLogStore).
func (h *healingWAL) IsMonotonic() bool { return true }

// Close closes the WAL and its meta store.
func (h *healingWAL) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var err error
	if h.w != nil {
		err = errors.Join(h.w.Close(), h.meta.Close())
	}
	h.w, h.meta, h.broken = nil, nil, errWALClosed
	return err
}

var _ raft.MonotonicLogStore = (*healingWAL)(nil)
