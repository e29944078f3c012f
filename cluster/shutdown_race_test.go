package cluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	logstore "github.com/arbiterhq/arbiter/log/store"
)

// A node stopped right after it starts, while its first term's tick may
// be waiting on raft's barrier, stops: raft answers a queued barrier only
// while it runs, and Shutdown waits for the leadership loop. (It hung
// about once in 300 runs of the OpenAPI test before the barrier was
// waited for with the loop's context.)
//
// Each run's node gets the smallest WAL segment and its directory is
// removed before the next run: 300 directories of the default 64 MiB
// preallocated segment need 19 GB, and CI failed on a fuller disk.
func TestShutdownRightAfterStartReturns(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 30
	}
	root := t.TempDir()
	for i := range runs {
		cfg := cluster.DefaultConfig()
		cfg.Domains = builtin.Domains()
		dir, err := os.MkdirTemp(root, "run")
		if err != nil {
			t.Fatal(err)
		}
		cfg.ID, cfg.DataDir = "n1", dir
		cfg.WALSegmentBytes = logstore.MinWALSegmentBytes
		cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Bootstrap = true
		node, err := cluster.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%20) * time.Millisecond) // stop at every point of the first term's start
		done := make(chan error, 1)
		go func() { done <- node.Shutdown(context.Background()) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("run %d: Shutdown has not returned after 30 s", i)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
}
