package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
)

// A node stopped right after it starts, while its first term's tick may
// be waiting on raft's barrier, stops: raft answers a queued barrier only
// while it runs, and Shutdown waits for the leadership loop. (It hung
// about once in 300 runs of the OpenAPI test before the barrier was
// waited for with the loop's context.)
func TestShutdownRightAfterStartReturns(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 30
	}
	for i := range runs {
		cfg := cluster.DefaultConfig()
		cfg.Domains = builtin.Domains()
		cfg.ID, cfg.DataDir = "n1", t.TempDir()
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
	}
}
