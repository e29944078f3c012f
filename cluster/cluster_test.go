package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

func nodesOf(c *clustertest.Cluster, i int) *nodes.Client {
	n := c.Node(i)
	return nodes.On(n)
}

// retryUnknown calls op until its outcome is known, as a careful client
// does: a retry carries the same idempotency key, so it either replays the
// first call's result or runs the command for the first time.
func retryUnknown[T any](t *testing.T, op func(ctx context.Context) (T, error)) (T, error) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := op(ctx)
		cancel()
		if !errs.IsOutcomeUnknown(err) || attempt == 5 {
			return res, err
		}
		t.Logf("outcome unknown, retrying with the same idempotency key: %v", err)
	}
}

// Many goroutines, spread over every node, race to create the same ids:
// exactly one create per id reports created, every other sees the winner.
func TestConcurrentCreateHasExactlyOneWinnerPerID(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	const ids, clients = 10, 30
	var mu sync.Mutex
	winners := map[string][]int{}
	stored := map[string]map[string]string{}
	var wg sync.WaitGroup
	for cl := 0; cl < clients; cl++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc := nodesOf(c, cl%c.Size())
			for k := 0; k < ids; k++ {
				id := fmt.Sprintf("id-%d", (k+cl)%ids)
				res, err := retryUnknown(t, func(ctx context.Context) (*nodes.CreateResult, error) {
					return nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: id, Properties: map[string]any{"owner": cl},
						IdempotencyKey: fmt.Sprintf("client-%d-%s", cl, id)})
				})
				if err != nil {
					t.Errorf("client %d create %s: %v", cl, id, err)
					return
				}
				mu.Lock()
				if res.Created {
					winners[id] = append(winners[id], cl)
				}
				if stored[id] == nil {
					stored[id] = map[string]string{}
				}
				stored[id][string(res.Node.Properties["owner"])] = ""
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for k := 0; k < ids; k++ {
		id := fmt.Sprintf("id-%d", k)
		if len(winners[id]) != 1 {
			t.Errorf("%s: %d winners %v, want exactly 1", id, len(winners[id]), winners[id])
			continue
		}
		if len(stored[id]) != 1 {
			t.Errorf("%s: callers saw %d different owners, want only the winner's", id, len(stored[id]))
		}
		if _, ok := stored[id][fmt.Sprint(winners[id][0])]; !ok {
			t.Errorf("%s: stored owner is not the winner %d", id, winners[id][0])
		}
	}
	c.WaitConverged(10 * time.Second)
}

// A CAS race on one fence: exactly one caller swaps.
func TestCASRaceHasExactlyOneWinner(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx := context.Background()
	if _, err := nodesOf(c, 0).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "lock", Properties: map[string]any{"fence": 1}}); err != nil {
		t.Fatal(err)
	}
	const racers = 24
	results := make(chan *nodes.CASResult, racers)
	var wg sync.WaitGroup
	for r := 0; r < racers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := retryUnknown(t, func(ctx context.Context) (*nodes.CASResult, error) {
				return nodesOf(c, r%c.Size()).CompareAndSet(ctx, nodes.CASRequest{NodeID: "lock",
					Conditions: map[string]any{"fence": 1}, Updates: map[string]any{"fence": 2, "owner": r},
					IdempotencyKey: fmt.Sprintf("racer-%d", r)})
			})
			if err != nil {
				t.Errorf("racer %d: %v", r, err)
				return
			}
			results <- res
		}()
	}
	wg.Wait()
	close(results)
	swapped := 0
	for res := range results {
		if res.Swapped {
			swapped++
		}
		if string(res.Node.Properties["fence"]) != "2" {
			t.Errorf("a racer saw fence %s after the race", res.Node.Properties["fence"])
		}
	}
	if swapped != 1 {
		t.Fatalf("%d racers swapped, want exactly 1", swapped)
	}
	node, err := nodesOf(c, 2).Get(ctx, "lock", fsm.Linearizable)
	if err != nil || node.Version != 2 {
		t.Fatalf("after race: %+v, %v (want version 2)", node, err)
	}
}

// Isolating the leader: the majority elects a new leader and keeps
// accepting writes; the old leader refuses linearizable reads (it cannot
// confirm leadership) though it still answers stale ones; after healing no
// acknowledged write is missing on any node.
// It runs with raft in memory and over TCP: the majority can elect only
// if the isolation really cuts raft's connections.
func TestIsolatedLeaderLosesNoAcknowledgedWrite(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "inmem", true: "tcp"}[tcp], func(t *testing.T) {
			testIsolatedLeaderLosesNoAcknowledgedWrite(t, clustertest.Options{Nodes: 3, TCP: tcp})
		})
	}
}

func testIsolatedLeaderLosesNoAcknowledgedWrite(t *testing.T, opts clustertest.Options) {
	c := clustertest.New(t, opts)
	ctx := context.Background()
	var acked []string
	write := func(via int, id string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := nodesOf(c, via).CreateIfAbsent(cctx, nodes.CreateRequest{NodeID: id})
		if err != nil || !res.Created {
			t.Fatalf("write %s via n%d: %+v %v", id, via+1, res, err)
		}
		acked = append(acked, id)
	}
	old := c.Leader()
	for k := 0; k < 5; k++ {
		write(k%3, fmt.Sprintf("before-%d", k))
	}

	c.Isolate(old)
	var majority []int
	for i := 0; i < c.Size(); i++ {
		if i != old {
			majority = append(majority, i)
		}
	}
	newLeader := -1
	if !c.Eventually(10*time.Second, func() bool {
		for _, i := range majority {
			if c.Node(i).IsLeader() {
				newLeader = i
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the majority elected no leader: %s", c.Describe())
	}
	for k := 0; k < 5; k++ {
		write(majority[k%2], fmt.Sprintf("during-%d", k))
	}

	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := nodesOf(c, old).Get(rctx, "during-0", fsm.Linearizable)
	cancel()
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("isolated old leader answered a linearizable read: %v", err)
	}
	if _, err := nodesOf(c, old).Get(ctx, "before-0", fsm.Stale); err != nil {
		t.Fatalf("isolated node refused a stale read of old data: %v", err)
	}

	c.Heal()
	c.WaitLeader(10 * time.Second)
	for _, i := range []int{old, newLeader} {
		for _, id := range acked {
			if _, err := nodesOf(c, i).Get(ctx, id, fsm.Linearizable); err != nil {
				t.Errorf("n%d: acknowledged %s missing: %v", i+1, id, err)
			}
		}
	}
	c.WaitConverged(10 * time.Second)
	for _, i := range c.Running() {
		for _, id := range acked {
			if _, err := nodesOf(c, i).Get(ctx, id, fsm.Stale); err != nil {
				t.Errorf("n%d local state lacks acknowledged %s: %v", i+1, id, err)
			}
		}
	}
}
