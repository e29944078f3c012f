package projection

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pub is a publication of target pt_0...1 with seq and a body of n bytes.
func pub(seq uint64, n int) *publicationRow {
	id := "pt_" + strings.Repeat("0", 31) + "1"
	body := fmt.Sprintf(`{"channels":[],"fencing_epoch":%d,"publication_seq":%d,"pad":%q,"target_id":%q}`, seq, seq, strings.Repeat("x", n), id)
	return &publicationRow{TargetID: id, PublicationSeq: seq, FencingEpoch: seq, Bytes: []byte(body)}
}

func currentOf(t *testing.T, root string, p *publicationRow) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ProjectionsDir, p.TargetID, CurrentFile))
	if err != nil {
		t.Fatalf("read current.json: %v", err)
	}
	return b
}

func tempLeft(t *testing.T, root string, p *publicationRow) []string {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(root, ProjectionsDir, p.TargetID, tempPattern))
	return left
}

// faultyOps fails the named step of a write.
type faultyOps struct {
	osOps
	fail string
}

var errInjected = errors.New("injected: no space left on device")

func (o faultyOps) CreateTemp(dir, pattern string) (tempFile, error) {
	if o.fail == "create" {
		return nil, errInjected
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return faultyFile{File: f, fail: o.fail}, nil
}

func (o faultyOps) Rename(from, to string) error {
	if o.fail == "rename" {
		return errInjected
	}
	return os.Rename(from, to)
}

func (o faultyOps) SyncDir(dir string) error {
	if o.fail == "syncdir" {
		return errInjected
	}
	return osOps{}.SyncDir(dir)
}

type faultyFile struct {
	*os.File
	fail string
}

func (f faultyFile) Chmod(m os.FileMode) error {
	if f.fail == "chmod" {
		return errInjected
	}
	return f.File.Chmod(m)
}

func (f faultyFile) Write(b []byte) (int, error) {
	if f.fail == "write" {
		// A partial write, as a full disk gives.
		n, _ := f.File.Write(b[:len(b)/2])
		return n, errInjected
	}
	return f.File.Write(b)
}

func (f faultyFile) Sync() error {
	if f.fail == "sync" {
		return errInjected
	}
	return f.File.Sync()
}

func (f faultyFile) Close() error {
	err := f.File.Close()
	if f.fail == "close" {
		return errInjected
	}
	return err
}

// A write that fails at any step before the rename leaves the previous
// current.json byte for byte and no temp file; the failure is returned
// (the FSM logs, counts and reports it) and told to the observer.
func TestWriteFailsClosed(t *testing.T) {
	for _, step := range []string{"create", "chmod", "write", "sync", "close", "rename"} {
		t.Run(step, func(t *testing.T) {
			root := t.TempDir()
			var events []Event
			w := newWriter(root, func(e Event) { events = append(events, e) })
			old := pub(10, 100)
			if err := w.write(old, false); err != nil {
				t.Fatal(err)
			}
			w.ops = faultyOps{fail: step}
			err := w.write(pub(11, 5000), false)
			if !errors.Is(err, errInjected) {
				t.Fatalf("write with a failing %s: %v", step, err)
			}
			if got := currentOf(t, root, old); !bytes.Equal(got, old.Bytes) {
				t.Fatalf("current.json changed after a failed %s: %s", step, got)
			}
			if left := tempLeft(t, root, old); len(left) != 0 {
				t.Fatalf("temp files left: %v", left)
			}
			if last := events[len(events)-1]; last.Kind != EventFailed || last.PublicationSeq != 11 || last.Err == nil {
				t.Fatalf("last event %+v, want failed 11", last)
			}
			// The disk recovers: the next publication is written.
			w.ops = osOps{}
			next := pub(12, 10)
			if err := w.write(next, false); err != nil || !bytes.Equal(currentOf(t, root, next), next.Bytes) {
				t.Fatalf("write after recovery: %v", err)
			}
		})
	}
}

// A failed fsync of the directory after the rename is reported; the new
// file is in place (readers see it) and nothing is undone.
func TestWriteReportsDirectorySyncFailure(t *testing.T) {
	root := t.TempDir()
	w := newWriter(root, nil)
	if err := w.write(pub(1, 1), false); err != nil {
		t.Fatal(err)
	}
	w.ops = faultyOps{fail: "syncdir"}
	p := pub(2, 1)
	if err := w.write(p, false); !errors.Is(err, errInjected) {
		t.Fatalf("write = %v, want the directory fsync's error", err)
	}
	if !bytes.Equal(currentOf(t, root, p), p.Bytes) {
		t.Fatal("the renamed file is not in place")
	}
}

// The writer never moves current.json backwards: an older or equal
// publication (a replay after a restart) is skipped.
func TestWriteNeverBackwards(t *testing.T) {
	root := t.TempDir()
	var kinds []string
	w := newWriter(root, func(e Event) { kinds = append(kinds, fmt.Sprintf("%s %d", e.Kind, e.PublicationSeq)) })
	for _, p := range []*publicationRow{pub(10, 1), pub(5, 2), pub(10, 3), pub(11, 4), pub(7, 5)} {
		if err := w.write(p, false); err != nil {
			t.Fatal(err)
		}
	}
	want := "written 10,skipped 5,skipped 10,written 11,skipped 7"
	if got := strings.Join(kinds, ","); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if got := currentOf(t, root, pub(11, 4)); !bytes.Equal(got, pub(11, 4).Bytes) {
		t.Fatalf("current.json = %s", got)
	}
	// A file that is not a publication is replaced by the next one.
	path := filepath.Join(root, ProjectionsDir, pub(1, 0).TargetID, CurrentFile)
	if err := os.WriteFile(path, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.write(pub(3, 1), false); err != nil || !bytes.Equal(currentOf(t, root, pub(3, 1)), pub(3, 1).Bytes) {
		t.Fatalf("write over a foreign file: %v", err)
	}
}

// A node without a root writes nothing, anywhere.
func TestWriterWithoutRoot(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var events []Event
	w := newWriter("", func(e Event) { events = append(events, e) })
	if err := w.write(pub(1, 1), false); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a writer without a root created %v", entries)
	}
	if len(events) != 1 || events[0].Kind != EventSkipped {
		t.Fatalf("events %+v", events)
	}
	if newWriter("", nil).active() {
		t.Fatal("a writer without root or observer registers effects")
	}
}

// A missing root is not created: the write fails (the root may be an
// unmounted volume).
func TestWriterMissingRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "gone")
	w := newWriter(root, nil)
	if err := w.write(pub(1, 1), false); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("write to a missing root = %v", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the writer created the missing root: %v", err)
	}
}

// A read-only root fails closed. (As root, permission bits do not bind;
// TestWriteFailsClosed covers the same failures by injection.)
func TestWriterReadOnlyRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permission bits do not make a directory read-only")
	}
	root := t.TempDir()
	w := newWriter(root, nil)
	old := pub(1, 1)
	if err := w.write(old, false); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ProjectionsDir, old.TargetID)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := w.write(pub(2, 1), false); err == nil {
		t.Fatal("a write into a read-only directory succeeded")
	}
	if !bytes.Equal(currentOf(t, root, old), old.Bytes) {
		t.Fatal("the old file changed")
	}
}

// Two writers of one root (two nodes given the same root by mistake)
// compare and rename under the root's lock: neither can move the file
// backwards. A writer that cannot get the lock in time fails closed.
func TestWritersOfOneRoot(t *testing.T) {
	root := t.TempDir()
	a, b := newWriter(root, nil), newWriter(root, nil)
	// The two writers below contend for the lock without a pause, which
	// polling does not make fair: on a loaded machine one can wait out
	// lockWait (seen under -race in CI). What is tested is order, not
	// that wait, so it is long here.
	a.wait, b.wait = time.Minute, time.Minute
	if err := a.write(pub(10, 1), false); err != nil {
		t.Fatal(err)
	}
	if err := b.write(pub(5, 1), false); err != nil {
		t.Fatal(err)
	}
	if got := currentOf(t, root, pub(10, 1)); !bytes.Equal(got, pub(10, 1).Bytes) {
		t.Fatalf("a second writer moved the file back: %s", got)
	}
	// Both writing every publication, concurrently and in any order:
	// the file ends at the last, and a reader never sees it go back.
	done := make(chan struct{})
	var reads []uint64
	go func() {
		defer close(done)
		for len(reads) < 1<<20 {
			seq, err := fileSeq(filepath.Join(root, ProjectionsDir, pub(1, 0).TargetID, CurrentFile))
			if err != nil {
				return
			}
			reads = append(reads, seq)
			if seq == 200 {
				return
			}
		}
	}()
	errc := make(chan error, 2)
	for _, w := range []*writer{a, b} {
		go func() {
			for s := uint64(11); s <= 200; s++ {
				if err := w.write(pub(s, int(s)), false); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	<-done
	for k := 1; k < len(reads); k++ {
		if reads[k] < reads[k-1] {
			t.Fatalf("the file went from publication %d back to %d", reads[k-1], reads[k])
		}
	}
	unlock, err := lockRoot(filepath.Join(root, ProjectionsDir, lockFile), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a.wait = 50 * time.Millisecond
	if err := a.write(pub(201, 1), false); err == nil || !strings.Contains(err.Error(), "locked by another writer") {
		t.Fatalf("a write while another holds the root: %v", err)
	}
	unlock()
	if err := a.write(pub(201, 1), false); err != nil {
		t.Fatalf("after the lock was released: %v", err)
	}
}

// A target directory that is a symlink (out of the root) is refused; a
// temp file a crashed writer left is removed.
func TestWriterDirectories(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	p := pub(1, 1)
	if err := os.MkdirAll(filepath.Join(root, ProjectionsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, ProjectionsDir, p.TargetID)); err != nil {
		t.Fatal(err)
	}
	w := newWriter(root, nil)
	if err := w.write(p, false); err == nil {
		t.Fatal("wrote through a symlinked target directory")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the root: %v", entries)
	}
	if err := os.Remove(filepath.Join(root, ProjectionsDir, p.TargetID)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ProjectionsDir, p.TargetID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(dir, ".current.json.123.tmp")
	if err := os.WriteFile(crashed, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.write(p, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(crashed); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the crashed writer's temp file is still there: %v", err)
	}
	st, err := os.Stat(filepath.Join(dir, CurrentFile))
	if err != nil || st.Mode().Perm() != fileMode {
		t.Fatalf("current.json mode %v (%v), want %v", st.Mode().Perm(), err, os.FileMode(fileMode))
	}
}

// Hostile target ids never become paths, whatever the writer is given.
func TestWriterRefusesHostileIDs(t *testing.T) {
	root := t.TempDir()
	parent := filepath.Dir(root)
	w := newWriter(root, nil)
	for _, id := range []string{"", "..", "../x", "pt_../../../etc", "/etc/passwd", "pt_" + strings.Repeat("0", 31) + "/",
		"pt_" + strings.Repeat("A", 32), "pt_" + strings.Repeat("0", 33), "pt_" + strings.Repeat("0", 31) + "\x00", "PT_" + strings.Repeat("0", 32)} {
		p := &publicationRow{TargetID: id, PublicationSeq: 1, Bytes: []byte("{}")}
		if err := w.write(p, false); err == nil {
			t.Errorf("wrote a publication of target %q", id)
		}
		if _, err := TargetPath(root, id); err == nil {
			t.Errorf("TargetPath(%q) has a path", id)
		}
	}
	var found []string
	_ = filepath.WalkDir(parent, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != lockFile {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 0 {
		t.Fatalf("files written: %v", found)
	}
}

// A root on a read-only file system (sysfs, read-only to everyone,
// root included) fails closed: nothing is created, the error returned.
func TestWriterReadOnlyFileSystem(t *testing.T) {
	const ro = "/sys"
	if err := os.Mkdir(filepath.Join(ro, ProjectionsDir), 0o755); err == nil {
		_ = os.Remove(filepath.Join(ro, ProjectionsDir))
		t.Skip(ro + " is writable here")
	}
	w := newWriter(ro, nil)
	if err := w.write(pub(1, 1), false); err == nil {
		t.Fatal("a write to a read-only file system succeeded")
	}
}
