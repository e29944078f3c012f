package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// A cluster whose voters all serve version 3 of the tick puts its byte
// cap on the idempotency ledger: keyed writes with large answers evict
// the oldest rows to stay under it, on every replica alike, far below
// the row cap.
func TestClusterLedgerStaysUnderItsByteCap(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Configure: func(_ int, cfg *cluster.Config) {
		cfg.IdempotencyMaxBytes = fsm.MinLedgerBytes
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	everyNode := func(cond func(s fsm.RetentionStats) bool) bool {
		for i := range c.Size() {
			if !cond(c.Node(i).FSM().RetentionStats()) {
				return false
			}
		}
		return true
	}
	if !c.Eventually(10*time.Second, func() bool { // the first tick of version 3
		return everyNode(func(s fsm.RetentionStats) bool { return s.LedgerMaxBytes == fsm.MinLedgerBytes })
	}) {
		t.Fatal("no tick put the byte cap in the state")
	}
	value, _ := json.Marshal(strings.Repeat("v", 4000))
	client := nodesOf(c, c.Leader())
	const writes = 600 // about 2.4 MB of answers, over twice the cap
	for i := range writes {
		req := nodes.CreateRequest{NodeID: fmt.Sprintf("big-%d", i), Properties: map[string]any{"v": json.RawMessage(value)},
			IdempotencyKey: fmt.Sprintf("key-%d", i)}
		if _, err := client.CreateIfAbsent(ctx, req); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	leader := c.Node(c.Leader()).FSM().RetentionStats()
	if leader.LedgerBytes == 0 || leader.LedgerBytes > fsm.MinLedgerBytes || leader.LedgerEvicted == 0 || leader.LedgerRows >= writes {
		t.Fatalf("leader: %+v, want at most %d bytes, some rows evicted", leader, uint64(fsm.MinLedgerBytes))
	}
	if !c.Eventually(10*time.Second, func() bool { // the followers apply the same evictions
		now := c.Node(c.Leader()).FSM().RetentionStats()
		return everyNode(func(s fsm.RetentionStats) bool {
			return s.LedgerBytes == now.LedgerBytes && s.LedgerRows == now.LedgerRows
		})
	}) {
		for i := range c.Size() {
			t.Logf("node %d: %+v", i, c.Node(i).FSM().RetentionStats())
		}
		t.Fatalf("the replicas' ledgers differ from the leader's %d bytes in %d rows", leader.LedgerBytes, leader.LedgerRows)
	}
}
