package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

// Backup and restore of the whole replicated state, for disaster recovery
// and for moving a cluster to other hosts. A backup is the FSM's snapshot
// stream (fsm/snapshot.go); it carries its own checksum, so a backup can be
// checked offline (fsm.FSM.InspectSnapshot, `arbiter snapshot inspect`).

// Backup writes a snapshot of the state to w. It runs on the leader only,
// after a read barrier, so the backup holds every write acknowledged
// before the call; a follower answers unavailable and names the leader.
// During an election it waits for one, as proposals do.
func (n *Node) Backup(ctx context.Context, w io.Writer) error {
	return n.backups.Backup(ctx, w)
}

// Backup is Node.Backup.
func (bk *backups) Backup(ctx context.Context, w io.Writer) error {
	if err := bk.mustLead(ctx, "backup"); err != nil {
		return err
	}
	ctx, cancel := bk.withTimeout(ctx)
	defer cancel()
	if err := bk.host.linearize(ctx); err != nil {
		return err
	}
	return bk.fsm.WriteSnapshot(w)
}

// RestoreResult describes a completed restore.
type RestoreResult struct {
	// Backup describes the backup as it was read.
	Backup fsm.SnapshotInfo `json:"backup"`
	// Index is the index of the first entry applied after the restore;
	// every replica's state from there on starts from the backup's.
	Index uint64 `json:"index"`
	// BumpIndex echoes the bump the leader applied (RestoreOptions), so
	// that a client can tell a leader too old to know it, which restores
	// without it.
	BumpIndex uint64 `json:"bump_index,omitempty"`
}

// Restore replaces the cluster's state with the backup read from r. It
// runs on the leader only, one at a time. The whole backup is read and
// checked before anything changes, so a damaged or foreign one is refused
// (invalid) and the state stays as it was.
//
// What the restored state keeps from the cluster rather than the backup
// is listed at fsm.FSM.PrepareRestore: members, an index and clock that
// never go backwards, and a change feed that expires every old cursor.
// Everything else rolls back to the backup. Fences that are log indexes
// (capacity, work-item claims, projection epochs, concept fences once
// set_index is enabled, node fields written with set_index) keep rising,
// since the index does; counters roll back, and a fenced sink that
// remembers a counted fence issued after the backup refuses re-issued
// lower ones until new ones pass it. Writes in flight when the restore
// starts fail with an unknown outcome.
func (n *Node) Restore(ctx context.Context, r io.Reader) (*RestoreResult, error) {
	return n.RestoreWith(ctx, r, fsm.RestoreOptions{})
}

// RestoreWith is Restore with options: opts.BumpIndex moves the index
// that many entries further, for a backup of another cluster that went on
// after it (see fsm.RestoreOptions).
func (n *Node) RestoreWith(ctx context.Context, r io.Reader, opts fsm.RestoreOptions) (*RestoreResult, error) {
	return n.backups.RestoreWith(ctx, r, opts)
}

// RestoreWith is Node.RestoreWith.
func (bk *backups) RestoreWith(ctx context.Context, r io.Reader, opts fsm.RestoreOptions) (*RestoreResult, error) {
	if err := opts.CheckBump(); err != nil {
		return nil, err
	}
	if err := bk.mustLead(ctx, "restore"); err != nil {
		return nil, err
	}
	if !bk.restoring.TryLock() {
		return nil, errs.New(errs.CodeConflict, "a restore is already running on this node")
	}
	defer bk.restoring.Unlock()

	// In the snapshot directory, the stream is a *.tmp that the next start
	// removes if a crash leaves it behind (logstore.Open).
	dir := ""
	if bk.cfg.DataDir != "" {
		dir = filepath.Join(bk.cfg.DataDir, "snapshots")
	}
	prepared, err := os.CreateTemp(dir, "restore-*.tmp")
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "restore: %v", err)
	}
	defer func() {
		prepared.Close()
		os.Remove(prepared.Name())
	}()
	buf := bufio.NewWriterSize(prepared, 256<<10)
	info, index, err := bk.fsm.PrepareRestoreWith(r, buf, opts)
	if errors.Is(err, fsm.ErrSnapshot) {
		return nil, errs.Errorf(errs.CodeInvalid, "restore: %v", err)
	}
	if err == nil {
		err = buf.Flush()
	}
	var size int64
	if err == nil {
		size, err = prepared.Seek(0, io.SeekCurrent)
	}
	if err == nil {
		_, err = prepared.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, errs.From(fmt.Errorf("restore: %w", err))
	}

	// raft stores the stream as a snapshot at an index past both its log
	// and the stream's own index, makes the FSM restore it, and sends it
	// to every follower, which have to install it since the log has a hole
	// there. Every entry after it has a larger index than the stream's.
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: index, Size: size}
	if err := bk.raft.Restore(meta, prepared, bk.cfg.ApplyTimeout); err != nil {
		return nil, raftError("restore", err)
	}
	bk.logger.Warn("restored the state from a backup",
		"backup_index", info.Index, "backup_state_hash", info.StateHash, "rows", info.Rows)

	// raft ends a restore with a no-op the FSM never sees; a tick moves the
	// FSM's applied index past it, so that linearizable reads resume now
	// rather than at the next write.
	res, err := bk.ticker.tick(ctx)
	if err != nil {
		return nil, errs.From(fmt.Errorf("restore done, but the first entry after it failed: %w", err))
	}
	return &RestoreResult{Backup: *info, Index: res.Index, BumpIndex: opts.BumpIndex}, nil
}

// mustLead waits, while no leader is known (an election), until this node
// leads or another one does, bounded by ctx and ApplyTimeout. Another
// leader is an error naming it, so that a client can go there.
func (bk *backups) mustLead(ctx context.Context, op string) error {
	if bk.raft == nil {
		return errs.New(errs.CodeUnavailable, "node is not started")
	}
	ctx, cancel := bk.withTimeout(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		if bk.isLeader() {
			return nil
		}
		if id, api := bk.leaderAPI(); id != "" {
			return errs.Errorf(errs.CodeUnavailable, "%s runs on the leader: %s at %s", op, id, api)
		}
		if sleepCtx(ctx, backoff(attempt)) != nil {
			return errs.Errorf(errs.CodeUnavailable, "%s runs on the leader, and there is none now", op)
		}
	}
}

// backupTransferTimeout bounds sending or receiving a backup over HTTP,
// in place of the server's read and write timeouts, which are sized for
// ordinary requests.
const backupTransferTimeout = 15 * time.Minute

// handleSnapshot streams a backup. A failure after the first byte cannot
// change the status any more; the connection is cut instead, and the
// client sees a truncated stream, which fails its checksum.
func (hs *httpAPI) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(backupTransferTimeout))
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := &firstWrite{w: w}
	if err := hs.node.Backup(r.Context(), bw); err != nil {
		if !bw.wrote {
			domain.WriteError(w, err)
			return
		}
		hs.logger.Error("backup stream failed midway", "error", err)
		panic(http.ErrAbortHandler)
	}
}

// handleRestore restores the backup in the request body (at most
// MaxRestoreBytes), its index bumped by the bump_index parameter.
func (hs *httpAPI) handleRestore(w http.ResponseWriter, r *http.Request) {
	p, err := domain.ParseParams(r, "bump_index")
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	bump, err := p.Uint("bump_index")
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(backupTransferTimeout))
	body := &bodyReader{r: http.MaxBytesReader(w, r.Body, hs.cfg.MaxRestoreBytes)}
	res, err := hs.node.RestoreWith(r.Context(), body, fsm.RestoreOptions{BumpIndex: bump})
	// The snapshot reader reports a cut body as a truncated stream; say
	// why it was cut.
	var tooBig *http.MaxBytesError
	if err != nil && errors.As(body.err, &tooBig) {
		err = errs.Errorf(errs.CodeTooLarge, "backup exceeds %d bytes (MaxRestoreBytes)", hs.cfg.MaxRestoreBytes)
	}
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	domain.WriteJSON(w, http.StatusOK, res)
}

// bodyReader keeps the first read error other than EOF.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// firstWrite records whether anything was written.
type firstWrite struct {
	w     io.Writer
	wrote bool
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.wrote = f.wrote || len(p) > 0
	return f.w.Write(p)
}

// seed makes the stores of a new cluster start from the backup at path:
// a raft snapshot of the backup's state (members emptied, as the new
// cluster has its own; see fsm.FSM.PrepareRestore) whose configuration is
// this node alone, as raft.RecoverCluster writes one. The backup is read
// and checked whole before a byte is written; the snapshot store makes the
// snapshot visible only once complete.
func (bk *backups) seed(path string, stores *Stores, trans raft.Transport) error {
	nm := bk.cfg.name
	src, err := os.Open(path)
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "%s: %v", nm("Restore"), err)
	}
	defer src.Close()
	dir := ""
	if bk.cfg.DataDir != "" {
		dir = filepath.Join(bk.cfg.DataDir, "snapshots") // a crash leaves a *.tmp that OpenStores removes
	}
	prepared, err := os.CreateTemp(dir, "seed-*.tmp")
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "%s: %v", nm("Restore"), err)
	}
	defer func() {
		prepared.Close()
		os.Remove(prepared.Name())
	}()
	info, index, err := bk.fsm.PrepareRestoreWith(src, prepared, fsm.RestoreOptions{BumpIndex: bk.cfg.RestoreBumpIndex})
	if err != nil {
		return errs.Errorf(errs.CodeInvalid, "%s %s: %v", nm("Restore"), path, err)
	}
	if info.Index == 0 {
		return errs.Errorf(errs.CodeInvalid, "%s %s: a backup at index 0 holds nothing", nm("Restore"), path)
	}
	size, err := prepared.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = prepared.Seek(0, io.SeekStart)
	}
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "%s: %v", nm("Restore"), err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(bk.cfg.ID), Address: raft.ServerAddress(bk.raftAddr)}}}
	sink, err := stores.Snapshot.Create(raft.SnapshotVersionMax, index, 1, conf, index, trans)
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "%s: create snapshot: %v", nm("Restore"), err)
	}
	if _, err := io.CopyN(sink, prepared, size); err != nil {
		_ = sink.Cancel()
		return errs.Errorf(errs.CodeInternal, "%s: write snapshot: %v", nm("Restore"), err)
	}
	if err := sink.Close(); err != nil {
		return errs.Errorf(errs.CodeInternal, "%s: write snapshot: %v", nm("Restore"), err)
	}
	bk.logger.Warn("seeded a new cluster from a backup", "backup", path, "backup_index", info.Index, "backup_state_hash", info.StateHash, "rows", info.Rows, "index", index)
	return nil
}
