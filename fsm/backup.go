package fsm

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/arbiterhq/arbiter/errs"
)

// Backups are snapshot streams kept outside raft: saved from a running
// cluster (WriteSnapshot), checked and described offline
// (InspectSnapshot), and restored into a cluster, the same one or another
// (PrepareRestore, then raft's user restore).

// SnapshotInfo describes a snapshot stream that was read to its end and
// checked exactly as Restore checks one. It holds counts and hashes only:
// no row, so nothing a tenant stored, is ever printed from a backup.
type SnapshotInfo struct {
	Format int `json:"format"`
	// Index and FSMTimeMs are the applied index and FSM time of the state.
	Index     uint64 `json:"index"`
	FSMTimeMs int64  `json:"fsm_time_ms"`
	Bytes     int64  `json:"bytes"`
	Rows      uint64 `json:"rows"`
	// Tables lists every table of the stream with its row count.
	Tables []TableRows `json:"tables"`
	// StateHash is the hex SHA-256 of the stream, which equals the
	// StateHash of a replica holding that state.
	StateHash string `json:"state_hash"`
	// DataHash is the hex data hash of the state (Hashes.Data): what a
	// cluster that restored this backup reports as its data_hash
	// (GET /v1/cluster/state-hash) until the next write, whichever
	// cluster it is. Empty where it was not computed.
	DataHash string `json:"data_hash,omitempty"`
}

// TableRows is the row count of one table.
type TableRows struct {
	Name string `json:"name"`
	Rows uint64 `json:"rows"`
}

// InspectSnapshot reads a whole snapshot stream, checks it (format, frame
// and row bounds, every row's decoding, the row count and the checksum)
// and describes it. The FSM's own state is not touched.
func (f *FSM) InspectSnapshot(r io.Reader) (*SnapshotInfo, error) {
	st, info, err := f.readBackup(r)
	if err != nil {
		return nil, err
	}
	// Hashed as the FSM would hash the state once loaded, so that it
	// compares with a live replica's data hash.
	h, err := f.writeState(io.Discard, st.db.Txn(false), false)
	if err != nil {
		return nil, err
	}
	info.DataHash = hex.EncodeToString(h.Data[:])
	return info, nil
}

// readBackup reads and checks a whole stream, counting its bytes.
func (f *FSM) readBackup(r io.Reader) (*loadedState, *SnapshotInfo, error) {
	cr := &countingReader{r: r}
	st, err := f.readState(bufio.NewReaderSize(cr, 256<<10))
	if err != nil {
		return nil, nil, err
	}
	return st, st.info(cr.n), nil
}

// PrepareRestore reads a backup from r, checks it as InspectSnapshot does,
// and writes to w the stream a cluster should restore: the backup's data
// with what describes the cluster rather than the data taken from this
// FSM's current state instead.
//
//   - Members: a backup taken on other hosts must not replace this
//     cluster's addresses, or no node could forward to the leader.
//   - The enabled command set and the retention: they follow this
//     cluster's binaries and configuration, not the backup's.
//   - Cluster id: the cluster stays itself; a cluster seeded from
//     another's backup (this FSM empty) gets an id of its own later.
//   - Applied index and FSM time: each is the larger of the two, so
//     neither ever moves backwards on a replica (leases keep expiring on
//     the cluster's clock, not the backup's); the index can be bumped
//     further (RestoreOptions.BumpIndex).
//   - Change feed: emptied, with sequences past every one this cluster
//     and the backup have issued, so every consumer's cursor answers
//     cursor_expired and the consumer resyncs instead of silently reading
//     a history that no longer matches the state.
//
// The returned info describes the backup as read; index is the applied
// index the stream written to w carries, which the log must place the
// restore after (raft.SnapshotMeta.Index), or the next entry applied
// would move the index backwards. Every replica restores the bytes
// written to w, so they all hold the same state.
func (f *FSM) PrepareRestore(r io.Reader, w io.Writer) (backup *SnapshotInfo, index uint64, err error) {
	return f.PrepareRestoreWith(r, w, RestoreOptions{})
}

// RestoreOptions change how a backup is restored.
type RestoreOptions struct {
	// BumpIndex raises the restored state's applied index by this many
	// entries past the larger of the backup's and the cluster's, so that
	// every log index after the restore, and every fence derived from one,
	// is above every index the cluster that took the backup reached,
	// provided its log index went at most BumpIndex past the backup's.
	// That matters where that cluster is not this one (it was lost, and a
	// new cluster is seeded from its backup): this cluster cannot know
	// how far it went. Like etcdutl snapshot restore --bump-revision. At
	// most MaxBumpIndex.
	BumpIndex uint64
}

// Bounds of a restore's index. MaxBumpIndex is far more entries than a
// cluster applies in years; MaxRestoredIndex keeps the restored index, and
// the fences derived from indexes (capacity multiplies the index by the
// demands one command may make), far from overflowing however often a
// backup is restored and bumped.
const (
	MaxBumpIndex     = 1 << 40
	MaxRestoredIndex = 1 << 56
)

// CheckBump refuses a BumpIndex above MaxBumpIndex, for callers that check
// before they read a backup.
func (o RestoreOptions) CheckBump() error {
	if o.BumpIndex > MaxBumpIndex {
		return errs.Errorf(errs.CodeInvalid, "bump_index %d is more than %d", o.BumpIndex, uint64(MaxBumpIndex))
	}
	return nil
}

// PrepareRestoreWith is PrepareRestore with options.
func (f *FSM) PrepareRestoreWith(r io.Reader, w io.Writer, opts RestoreOptions) (backup *SnapshotInfo, index uint64, err error) {
	if err := opts.CheckBump(); err != nil {
		return nil, 0, err
	}
	st, info, err := f.readBackup(r)
	if err != nil {
		return nil, 0, err
	}

	cur := f.db.Load().Txn(false)
	txn := st.db.Txn(true)
	defer txn.Abort()
	if _, err := txn.DeleteAll(tableMembers, "id"); err != nil {
		return nil, 0, fmt.Errorf("fsm: restore: members: %w", err)
	}
	it, err := cur.Get(tableMembers, "id")
	if err != nil {
		return nil, 0, fmt.Errorf("fsm: restore: members: %w", err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		m := *raw.(*Member)
		if err := txn.Insert(tableMembers, &m); err != nil {
			return nil, 0, fmt.Errorf("fsm: restore: members: %w", err)
		}
	}
	if _, err := txn.DeleteAll(tableChanges, "id"); err != nil {
		return nil, 0, fmt.Errorf("fsm: restore: change feed: %w", err)
	}
	now, m := readMeta(cur), readMeta(txn)
	m.Enabled, m.Retention = now.Enabled, now.Retention // the cluster's, like its members
	m.ClusterID = now.ClusterID
	if base := max(m.Index, now.Index); base > MaxRestoredIndex-opts.BumpIndex {
		return nil, 0, errs.Errorf(errs.CodeInvalid, "restore: index %d plus bump_index %d is more than %d", base, opts.BumpIndex, uint64(MaxRestoredIndex))
	}
	m.Index = max(m.Index, now.Index) + opts.BumpIndex
	m.Now = max(m.Now, now.Now)
	m.LastSeq = max(m.LastSeq, now.LastSeq) + 1
	m.FirstSeq = m.LastSeq + 1
	writeMeta(txn, m)
	txn.Commit()

	h, err := f.writeState(w, st.db.Txn(false), false)
	if err != nil {
		return nil, 0, err
	}
	// Members, feed and bookkeeping are not data: the stream written
	// has the backup's data hash.
	info.DataHash = hex.EncodeToString(h.Data[:])
	return info, m.Index, nil
}

func (st *loadedState) info(bytes int64) *SnapshotInfo {
	return &SnapshotInfo{
		Format:    st.hdr.Format,
		Index:     st.hdr.Index,
		FSMTimeMs: st.hdr.Now,
		Bytes:     bytes,
		Rows:      st.rows,
		Tables:    st.counts,
		StateHash: hex.EncodeToString(st.sum[:]),
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
