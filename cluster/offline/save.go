package offline

import (
	"errors"
	"fmt"
	"io"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

// OfflineBackup describes what SaveOffline wrote.
type OfflineBackup struct {
	// SnapshotIndex is the index of the snapshot it started from (0:
	// none); Entries the log entries applied after it; LastIndex the last
	// entry of the log.
	SnapshotIndex uint64 `json:"snapshot_index"`
	Entries       uint64 `json:"entries"`
	LastIndex     uint64 `json:"last_index"`
	// Index is the applied index of the state written.
	Index uint64 `json:"index"`
}

// offlineBatch is how many log entries SaveOffline applies at once (the
// default MaxAppendEntries, raft's largest batch).
const offlineBatch = 128

// SaveOffline writes to w, in the backup format, the state of the stopped
// node in dir: its newest snapshot with every entry of its log after it
// applied, as raft would apply them. The log's last entries may not have
// been committed when the node stopped (a follower's, or a leader's cut
// off from its cluster): the backup includes them. domains are what the
// node serves.
func SaveOffline(dir string, domains []domain.Domain, w io.Writer) (*OfflineBackup, error) {
	s, _, err := openOffline(dir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	f, err := fsm.New(fsm.Config{Modules: domain.Modules(domains)})
	if err != nil {
		return nil, err
	}
	out := &OfflineBackup{}
	if out.SnapshotIndex, err = restoreNewest(s.Snapshot, f); err != nil {
		return nil, err
	}
	first, err := s.Log.FirstIndex()
	if err == nil {
		out.LastIndex, err = s.Log.LastIndex()
	}
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read the log: %v", err)
	}
	from := out.SnapshotIndex + 1
	if out.LastIndex >= from && first > from {
		return nil, errs.Errorf(errs.CodeInternal, "the log starts at %d, after the snapshot at %d: entries are missing", first, out.SnapshotIndex)
	}
	batch := make([]*raft.Log, 0, offlineBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		f.ApplyBatch(batch)
		batch = batch[:0]
		if h := f.Halted(); h != nil {
			return errs.Errorf(errs.CodeConflict, "the log holds a command this binary cannot apply (%s): save with the binary the node runs", h)
		}
		return nil
	}
	for i := from; i <= out.LastIndex; i++ {
		l := new(raft.Log)
		if err := s.Log.GetLog(i, l); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "log entry %d: %v", i, err)
		}
		out.Entries++
		if l.Type != raft.LogCommand && l.Type != raft.LogConfiguration {
			continue // what raft never hands to the state machine
		}
		if batch = append(batch, l); len(batch) == offlineBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	out.Index = f.AppliedIndex()
	if err := f.WriteSnapshot(w); err != nil {
		return nil, err
	}
	return out, nil
}

// restoreNewest restores the newest snapshot that restores into f, and
// returns its index (0 when there is none).
func restoreNewest(store raft.SnapshotStore, f *fsm.FSM) (uint64, error) {
	snaps, err := store.List()
	if err != nil {
		return 0, errs.Errorf(errs.CodeInternal, "list snapshots: %v", err)
	}
	var failures []error
	for _, meta := range snaps {
		_, rc, err := store.Open(meta.ID)
		if err == nil {
			err = f.Restore(rc) // closes rc
		}
		if err == nil {
			return meta.Index, nil
		}
		failures = append(failures, fmt.Errorf("snapshot %s: %w", meta.ID, err))
	}
	if len(failures) > 0 {
		return 0, errs.Errorf(errs.CodeInternal, "no snapshot restores: %v", errors.Join(failures...))
	}
	return 0, nil
}
