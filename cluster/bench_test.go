package cluster_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// BenchmarkEmbeddedCreates measures what an embedding host's proposals
// get: create-if-absent of new node ids by 64 goroutines on the leader of
// a 3-node cluster in one process, without HTTP, raft over loopback TCP,
// fsync on (issue 11's target: 20,000 creates/s), with each log store.
// Every node and the goroutines share the machine's cores.
// EMBEDDED_GOROUTINES=N runs N proposers instead of 64.
//
//	go test -run '^$' -bench EmbeddedCreates -benchtime 20000x ./cluster
func BenchmarkEmbeddedCreates(b *testing.B) {
	for _, store := range []string{logstore.Bolt, logstore.WAL} {
		b.Run(store, func(b *testing.B) { embeddedCreates(b, store) })
	}
}

func embeddedCreates(b *testing.B, store string) {
	c := clustertest.New(b, clustertest.Options{Nodes: 3, TCP: true, Configure: func(_ int, cfg *cluster.Config) {
		cfg.LogStore = store
		cfg.NoSyncUnsafe = false // clustertest turns fsync off; a host keeps it on
	}})
	leader := c.WaitLeader(10 * time.Second)
	n := c.Node(leader)
	client := nodes.On(n)
	ctx := context.Background()
	var next, failed atomic.Int64
	b.SetParallelism(max(1, benchGoroutines()/runtime.GOMAXPROCS(0))) // 64 goroutines in all
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("e-%d", next.Add(1))
			out, err := client.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: id, Labels: []string{"bench"}})
			if err != nil || !out.Created {
				if failed.Add(1) == 1 {
					b.Errorf("create %s: created %v, %v", id, out != nil && out.Created, err)
				}
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// benchGoroutines is EMBEDDED_GOROUTINES, or 64: the proposers of
// BenchmarkEmbeddedCreates, to see how its rate follows the concurrency.
func benchGoroutines() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("EMBEDDED_GOROUTINES"), &n); err == nil && n > 0 {
		return n
	}
	return 64
}
