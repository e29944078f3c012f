package projection

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
)

// Where and how a node writes publications.
const (
	// ProjectionsDir is the directory under a runtime root that holds one
	// directory per target.
	ProjectionsDir = "hook-projections"
	// CurrentFile is a target's publication.
	CurrentFile = "current.json"
	// tempPattern names the unique temp siblings of current.json.
	tempPattern = ".current.json.*.tmp"
	// lockFile, under ProjectionsDir, is held by the one node writing
	// a root.
	lockFile = ".writer.lock"
	// lockWait bounds how long a write waits for another writer of the
	// same root before it fails closed.
	lockWait = 2 * time.Second
	// fileMode: readable by the hooks of the node's user and group.
	fileMode = 0o640
	// maxReadBytes bounds the read of an existing current.json.
	maxReadBytes = 8 << 20
)

// Event is something a node's writer did, reported to the observer a
// host program sets (WithObserver), one at a time (see WithObserver):
// to wake the hooks that render a target, or to audit the writes.
type Event struct {
	Kind           string // EventGranted, EventWritten, EventSkipped or EventFailed
	TargetID       string
	PublicationSeq uint64 // 0 for EventGranted
	FencingEpoch   uint64
	// Restored is set for writes that bring files up to a restored
	// state (restart, snapshot install, backup restore).
	Restored bool
	Err      error // for EventFailed
}

// Event kinds.
const (
	EventGranted = "granted" // a lease was granted (applied) at FencingEpoch
	EventWritten = "written" // current.json now holds the publication
	EventSkipped = "skipped" // current.json already held this or a later publication
	EventFailed  = "failed"  // the write failed; the old file is whole
)

// writer writes a node's publications under its runtime root. Its
// methods run as effects (fsm.Effect: after commit, the restored hook,
// and the retries of failed writes), one at a time.
type writer struct {
	root    string // "" for a node without a runtime root: it writes nothing
	observe func(Event)
	ops     fileOps
	wait    time.Duration   // for the root's lock (lockWait)
	cleaned map[string]bool // target dirs whose leftover temp files were removed
}

func newWriter(root string, observe func(Event)) *writer {
	return &writer{root: root, observe: observe, ops: osOps{}, wait: lockWait, cleaned: map[string]bool{}}
}

// active reports whether the writer has anything to do: files to write or
// an observer to tell.
func (w *writer) active() bool { return w.root != "" || w.observe != nil }

func (w *writer) notify(e Event) {
	if w.observe != nil {
		w.observe(e)
	}
}

// granted registers, for an observer, the news that a lease was granted.
func (w *writer) granted(tx *fsm.Tx, target string, epoch uint64) {
	if w.observe == nil {
		return
	}
	tx.AfterCommit("projection grant", func() error {
		w.notify(Event{Kind: EventGranted, TargetID: target, FencingEpoch: epoch})
		return nil
	})
}

// fileKeyPrefix starts the key of every write of a target's file, a keyed
// effect (fsm.Effect): the FSM keeps the outcome of a target's last
// write, which a publish answer reports (Service.Publish), and retries a
// failed one until it, or a later write of the target, succeeds. A retry
// is right at any later time: a write never puts an older publication
// over a newer one.
const fileKeyPrefix = "projection/"

func fileKey(target string) string { return fileKeyPrefix + target }

// publish registers the write of p as an effect of the command that
// recorded it: keyed by its target on a node with a root, a mere
// notification on one that has only an observer.
func (w *writer) publish(tx *fsm.Tx, p *publicationRow) {
	switch {
	case w.root != "":
		tx.AfterCommitKeyed("projection publish", fileKey(p.TargetID), func() error { return w.write(p, false) })
	case w.observe != nil:
		tx.AfterCommit("projection publish", func() error { return w.write(p, false) })
	}
}

// restored writes, after a snapshot replaced the state, every target's
// last publication that is newer than its file.
func (w *writer) restored(rt *fsm.ReadTx) []fsm.Effect {
	if !w.active() {
		return nil
	}
	it, err := rt.Txn.Get(tablePublications, "id")
	if err != nil {
		return []fsm.Effect{{Name: "projection restored", Run: func() error { return fmt.Errorf("scan publications: %w", err) }}}
	}
	var out []fsm.Effect
	for raw := it.Next(); raw != nil; raw = it.Next() {
		p := raw.(*publicationRow)
		e := fsm.Effect{Name: "projection restored", Run: func() error { return w.write(p, true) }}
		if w.root != "" {
			e.Key = fileKey(p.TargetID)
		}
		out = append(out, e)
	}
	return out
}

// write makes current.json of p's target hold p, unless it already holds
// p or a later publication: through a unique temp sibling, fsynced, then
// renamed over current.json, then the directory fsynced, so a reader
// sees the old file whole or the new one whole. On any failure the old
// file stays as it was.
func (w *writer) write(p *publicationRow, restored bool) error {
	e := Event{TargetID: p.TargetID, PublicationSeq: p.PublicationSeq, FencingEpoch: p.FencingEpoch, Restored: restored}
	if w.root == "" {
		e.Kind = EventSkipped
		w.notify(e)
		return nil
	}
	wrote, err := w.writeFile(p)
	switch {
	case err != nil:
		e.Kind, e.Err = EventFailed, err
	case wrote:
		e.Kind = EventWritten
	default:
		e.Kind = EventSkipped
	}
	w.notify(e)
	if err != nil {
		return fmt.Errorf("projection %s: publication %d not written (the previous file is unchanged): %w", p.TargetID, p.PublicationSeq, err)
	}
	return nil
}

func (w *writer) writeFile(p *publicationRow) (wrote bool, err error) {
	// The id was validated by the command that recorded it; it is
	// checked again because it is about to become a path.
	if err := CheckTargetID(p.TargetID); err != nil {
		return false, err
	}
	base, err := w.base()
	if err != nil {
		return false, err
	}
	// The comparison with the file and the rename happen under the
	// root's lock: a second writer of the root (another node given the
	// same one by mistake) can never rename an older publication over a
	// newer one.
	unlock, err := lockRoot(filepath.Join(base, lockFile), w.wait)
	if err != nil {
		return false, err
	}
	defer unlock()
	dir := filepath.Join(base, p.TargetID)
	if err := w.ensureDir(base, dir); err != nil {
		return false, err
	}
	cur := filepath.Join(dir, CurrentFile)
	if have, err := fileSeq(cur); err != nil {
		return false, err
	} else if have >= p.PublicationSeq {
		return false, nil
	}
	tmp, err := w.ops.CreateTemp(dir, tempPattern)
	if err != nil {
		return false, fmt.Errorf("create temp file: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(fileMode); err != nil {
		return false, fmt.Errorf("chmod temp file: %w", err)
	}
	if _, err := tmp.Write(p.Bytes); err != nil {
		return false, fmt.Errorf("write temp file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return false, fmt.Errorf("fsync temp file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("close temp file: %w", err)
	}
	if err := w.ops.Rename(tmp.Name(), cur); err != nil {
		return false, fmt.Errorf("rename over %s: %w", CurrentFile, err)
	}
	done = true
	if err := w.ops.SyncDir(dir); err != nil {
		// The rename happened: readers see the new file, which may not
		// survive a crash. Reported, not undone.
		return true, fmt.Errorf("fsync directory after rename: %w", err)
	}
	return true, nil
}

// rootError is why this node cannot write its files now, nil if it can
// as far as it knows: its root is gone (moved, unmounted) or is no longer
// a directory. A node without a root has nothing to write.
func (w *writer) rootError() error {
	if w.root == "" {
		return nil
	}
	if st, err := os.Stat(w.root); err != nil || !st.IsDir() {
		return fmt.Errorf("runtime root %s is missing or not a directory", w.root)
	}
	return nil
}

// base is <root>/hook-projections, created if the root exists. A
// missing root is not created: it may be a volume that is not mounted.
func (w *writer) base() (string, error) {
	if err := w.rootError(); err != nil {
		return "", err
	}
	base := filepath.Join(w.root, ProjectionsDir)
	if err := mkdirSynced(w.ops, w.root, base); err != nil {
		return "", err
	}
	return base, nil
}

// ensureDir makes a target's directory (a real one: not a symlink out of
// the root) and removes the temp files a crashed writer may have left.
func (w *writer) ensureDir(base, dir string) error {
	if err := mkdirSynced(w.ops, base, dir); err != nil {
		return err
	}
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if !w.cleaned[dir] {
		left, _ := filepath.Glob(filepath.Join(dir, tempPattern))
		for _, f := range left {
			_ = os.Remove(f)
		}
		w.cleaned[dir] = true
	}
	return nil
}

// mkdirSynced creates dir (whose parent is parent) if it is missing, and
// fsyncs parent so the new entry survives a crash.
func mkdirSynced(ops fileOps, parent, dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := ops.SyncDir(parent); err != nil {
		return fmt.Errorf("fsync %s: %w", parent, err)
	}
	return nil
}

// fileSeq is the publication_seq current.json holds, 0 when there is no
// file or it is not a publication (a file this writer did not write; the
// next publication replaces it).
func fileSeq(path string) (uint64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", CurrentFile, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxReadBytes))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", CurrentFile, err)
	}
	var head struct {
		PublicationSeq uint64 `json:"publication_seq"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return 0, nil
	}
	return head.PublicationSeq, nil
}

// TargetPath is where a node with runtime root root keeps target's
// current.json; an id not of the derived form has no path.
func TargetPath(root, target string) (string, error) {
	if err := CheckTargetID(target); err != nil {
		return "", err
	}
	if strings.TrimSpace(root) == "" {
		return "", errors.New("no runtime root")
	}
	return filepath.Join(root, ProjectionsDir, target, CurrentFile), nil
}
