package log_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// A snapshot interrupted by a crash is left as snapshots/<id>.tmp; opening
// the stores deletes it and keeps complete snapshots.
func TestOpenStoresRemovesPartialSnapshots(t *testing.T) {
	dir := t.TempDir()
	stores, err := arblog.OpenStores(dir, arblog.StoreOptions{LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	// One complete snapshot, through raft's own store.
	sink, err := stores.Snapshot.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("state")); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	// One left half-written, as by a SIGKILL during Persist.
	partial := filepath.Join(dir, "snapshots", "1-11-123.tmp")
	if err := os.MkdirAll(partial, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, "state.bin"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := stores.Close(); err != nil {
		t.Fatal(err)
	}

	stores, err = arblog.OpenStores(dir, arblog.StoreOptions{LogOutput: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer stores.Close()
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("partial snapshot %s still exists after open (stat: %v)", partial, err)
	}
	metas, err := stores.Snapshot.List()
	if err != nil || len(metas) != 1 || metas[0].Index != 10 {
		t.Errorf("complete snapshots after open: %+v, %v; want the one at index 10", metas, err)
	}
}
