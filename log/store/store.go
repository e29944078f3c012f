package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/arbiterhq/arbiter/internal/flock"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	bolt "go.etcd.io/bbolt"
)

// Log store kinds. A data directory keeps the kind it was created with for
// its whole life: Open reads it off the files it finds.
const (
	// WAL is hashicorp/raft-wal (the store Consul ships): segment
	// files appended with one fsync per batch.
	WAL = "wal"
	// Bolt is hashicorp/raft-boltdb/v2: one bbolt file, raft.db,
	// whose commit costs two fsyncs.
	Bolt = "bolt"
	// Default is the kind of a new data directory: the WAL, which
	// commits a batch with one fsync where bolt needs two (BENCHMARKS.md,
	// "Embedded proposers"). A directory made by an older build keeps
	// bolt.
	Default = WAL
)

// Options configure Open.
type Options struct {
	// Kind is the log store of a new data directory (WAL or
	// Bolt; "" is Default). An existing directory keeps its
	// own, whatever Kind says.
	Kind string
	// NoSyncUnsafe turns off fsync of the log. A crash may then lose
	// acknowledged writes. For benchmarks and tests only.
	NoSyncUnsafe bool
	// WALSegmentBytes is the size of a raft-wal segment file (0: raft-wal's
	// default, 64 MiB). The WAL drops compacted entries a whole sealed
	// segment at a time, so smaller segments give disk back sooner.
	WALSegmentBytes int
	// LogCacheSize is how many recent entries stay in memory (default 512).
	LogCacheSize int
	// SnapshotRetain is how many snapshots stay on disk (default 2).
	SnapshotRetain int
	// LogOutput receives the snapshot store's own messages (default stderr).
	LogOutput io.Writer
}

// Stores are the three durable stores a raft node needs.
type Stores struct {
	Log      raft.LogStore
	Stable   raft.StableStore
	Snapshot raft.SnapshotStore
	// Kind is the log store in use (WAL or Bolt).
	Kind  string
	close func() error
}

// Where each kind keeps its files inside a data directory.
const (
	boltFile = "raft.db"
	walDir   = "wal"
)

// walDefaultSegmentBytes is raft-wal's own default segment size.
const walDefaultSegmentBytes = 64 << 20

// The bounds of Options.WALSegmentBytes. A segment of 4 KiB holds
// only a few entries and rotates on almost every batch (tests use it to
// make compaction free segments); raft-wal refuses files of 2 GiB or more.
const (
	MinWALSegmentBytes = 4 << 10
	MaxWALSegmentBytes = 1 << 30
)

// Open opens (creating if needed) the log and stable store and
// snapshots/ in dir.
func Open(dir string, opt Options) (*Stores, error) {
	if dir == "" {
		return nil, errors.New("log: empty data directory")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("log: create data directory: %w", err)
	}
	if opt.LogCacheSize <= 0 {
		opt.LogCacheSize = 512
	}
	if opt.SnapshotRetain <= 0 {
		opt.SnapshotRetain = 2
	}
	if opt.LogOutput == nil {
		opt.LogOutput = os.Stderr
	}
	kind, err := DirKind(dir, opt.Kind)
	if err != nil {
		return nil, err
	}
	var s *Stores
	switch kind {
	case WAL:
		s, err = openWAL(dir, opt)
	default:
		s, err = openBolt(dir, opt)
	}
	if err != nil {
		return nil, err
	}
	cache, err := raft.NewLogCache(opt.LogCacheSize, s.Log)
	if err != nil {
		_ = s.close()
		return nil, fmt.Errorf("log: log cache: %w", err)
	}
	s.Log = cache
	if err := removePartialSnapshots(dir); err != nil {
		_ = s.close()
		return nil, err
	}
	files, err := raft.NewFileSnapshotStore(dir, opt.SnapshotRetain, opt.LogOutput)
	if err != nil {
		_ = s.close()
		return nil, fmt.Errorf("log: snapshot store: %w", err)
	}
	s.Snapshot = &snapshotStore{FileSnapshotStore: files, dir: filepath.Join(dir, "snapshots")}
	return s, nil
}

// HasLogFiles reports whether dir holds a log store's files (either
// kind), without opening or creating anything.
func HasLogFiles(dir string) (bool, error) {
	for _, name := range []string{boltFile, walDir} {
		_, err := os.Stat(filepath.Join(dir, name))
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, err
		}
	}
	return false, nil
}

// DirKind is the log store of the data directory dir: the one whose
// files it holds, or want (Default when empty) for a directory that
// holds neither. A directory holding both is refused: which one is the
// log would be a guess.
func DirKind(dir, want string) (string, error) {
	if want == "" {
		want = Default
	}
	if want != WAL && want != Bolt {
		return "", fmt.Errorf("log: log store %q: want %s or %s", want, WAL, Bolt)
	}
	_, errBolt := os.Stat(filepath.Join(dir, boltFile))
	_, errWAL := os.Stat(filepath.Join(dir, walDir))
	switch {
	case errBolt == nil && errWAL == nil:
		return "", fmt.Errorf("log: %s holds both %s and %s/: remove the one that is not the log", dir, boltFile, walDir)
	case errBolt == nil:
		return Bolt, nil
	case errWAL == nil:
		return WAL, nil
	}
	return want, nil
}

func openBolt(dir string, opt Options) (*Stores, error) {
	db, err := raftboltdb.New(raftboltdb.Options{
		Path:   filepath.Join(dir, boltFile),
		NoSync: opt.NoSyncUnsafe,
		// The freelist is derivable from the pages, so bbolt can rebuild
		// it on open instead of writing it on every commit (etcd's
		// default too). On this project's machines that halves the time
		// of a synced StoreLogs (1.3 ms -> 0.56 ms for one entry); it
		// costs a scan of the file at open.
		BoltOptions: &bolt.Options{
			Timeout:        time.Second,
			NoFreelistSync: true,
			FreelistType:   bolt.FreelistMapType,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("log: open %s: %w", boltFile, err)
	}
	return &Stores{Log: db, Stable: db, Kind: Bolt, close: db.Close}, nil
}

// walLockFile is the WAL's lock, next to wal/ in the data directory.
// raft-wal opens its meta store (bbolt) without a timeout, so a second
// opener of a directory in use (an offline tool on a running node's
// directory) would wait on bbolt's flock forever; it takes this lock first
// and is refused after walLockWait, as the bolt store is.
const (
	walLockFile = "wal.lock"
	walLockWait = time.Second
)

func openWAL(dir string, opt Options) (*Stores, error) {
	if n := opt.WALSegmentBytes; n != 0 && (n < MinWALSegmentBytes || n > MaxWALSegmentBytes) {
		return nil, fmt.Errorf("log: WAL segment size %d: want 0 (64 MiB) or %d to %d bytes", n, MinWALSegmentBytes, MaxWALSegmentBytes)
	}
	path := filepath.Join(dir, walDir)
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("log: create %s: %w", path, err)
	}
	release, err := flock.Acquire(filepath.Join(dir, walLockFile), walLockWait)
	if err != nil {
		return nil, fmt.Errorf("log: open %s: %w (is another process using it?)", path, err)
	}
	// raft-wal's Close leaves its meta store (a bbolt file) open, and so
	// locked: a node reopened in the same process would wait on the lock
	// forever. The store is made here and closed here.
	filer := segment.NewFiler(path, walfs.New())
	if opt.NoSyncUnsafe {
		filer = segment.NewFiler(path, noSyncFS{walfs.New()})
	}
	size := opt.WALSegmentBytes
	if size == 0 {
		size = walDefaultSegmentBytes
	}
	open := func() (*wal.WAL, *metadb.BoltMetaDB, error) {
		meta := &metadb.BoltMetaDB{}
		w, err := wal.Open(path, wal.WithMetaStore(meta), wal.WithSegmentFiler(filer), wal.WithSegmentSize(size))
		if err != nil {
			_ = meta.Close()
			return nil, nil, err
		}
		return w, meta, nil
	}
	w, err := newHealingWAL(path, size, open)
	if err != nil {
		_ = release()
		if errors.Is(err, syscall.ENOSPC) {
			return nil, fmt.Errorf("log: open %s: %w (a WAL segment file is preallocated at %d bytes: free disk space, or choose smaller segments)", path, err, size)
		}
		return nil, fmt.Errorf("log: open %s: %w", path, err)
	}
	closeAll := func() error { return errors.Join(w.Close(), release()) }
	return &Stores{Log: w, Stable: w, Kind: WAL, close: closeAll}, nil
}

// noSyncFS is raft-wal's file system with every fsync of the segment
// files skipped: Options.NoSyncUnsafe for the WAL.
type noSyncFS struct{ *walfs.FS }

func (f noSyncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.FS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return noSyncFile{w}, nil
}

func (f noSyncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.FS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return noSyncFile{w}, nil
}

type noSyncFile struct{ types.WritableFile }

func (noSyncFile) Sync() error { return nil }

// removePartialSnapshots deletes the snapshots a crash interrupted:
// raft's file store writes each into "snapshots/<id>.tmp" and renames it
// when complete, but never deletes a .tmp it finds at start (it only
// warns), so a node killed mid-snapshot would keep the partial copy
// forever, and frequent crashes would fill the disk. A restore prepares
// its stream there too (cluster.Node.Restore). No snapshot can be
// in progress while the stores are being opened.
func removePartialSnapshots(dir string) error {
	partial, err := filepath.Glob(filepath.Join(dir, "snapshots", "*.tmp"))
	if err != nil {
		return fmt.Errorf("log: list partial snapshots: %w", err)
	}
	for _, p := range partial {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("log: remove partial snapshot: %w", err)
		}
	}
	return nil
}

// Close closes the log and stable store. Call it only after raft has
// shut down.
func (s *Stores) Close() error {
	return s.close()
}
