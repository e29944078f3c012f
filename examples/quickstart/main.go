package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
)

const (
	clients = 50
	ids     = 10
)

func main() {
	q := &quickstart{}
	err := q.run()
	q.stopAll()
	if err != nil {
		fmt.Printf("\nFAILED: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("\nAll checks held.")
}

type quickstart struct {
	dir   string
	nodes [3]*cluster.Node
	cfgs  [3]cluster.Config
}

func (q *quickstart) run() error {
	dir, err := os.MkdirTemp("", "arbiter-quickstart-")
	if err != nil {
		return err
	}
	q.dir = dir
	fmt.Println("Arbiter quickstart: a 3-node cluster over loopback TCP")
	if err := q.startCluster(); err != nil {
		return err
	}
	if err := q.race(); err != nil {
		return err
	}
	stopped, err := q.failover()
	if err != nil {
		return err
	}
	return q.rejoin(stopped)
}

func (q *quickstart) startCluster() error {
	for i := range q.nodes {
		cfg := cluster.DefaultConfig()
		cfg.Domains = builtin.Domains()
		cfg.ID = fmt.Sprintf("n%d", i+1)
		cfg.DataDir = fmt.Sprintf("%s/n%d", q.dir, i+1)
		cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = 500*time.Millisecond, 500*time.Millisecond
		cfg.LeaderLeaseTimeout = 250 * time.Millisecond
		cfg.Logger = slog.New(slog.DiscardHandler)
		if i == 0 {
			cfg.Bootstrap = true
		} else {
			cfg.Join = []string{"http://" + q.nodes[0].APIAddr()}
		}
		if err := q.start(i, cfg); err != nil {
			return err
		}
		if i == 0 { // the others join through it: it must lead first
			if err := waitReady(q.nodes[0]); err != nil {
				return err
			}
		}
	}
	// n2 and n3 joined as non-voters; the leader promotes them once they
	// have caught up. Until then the cluster could not survive losing n1,
	// so wait until every node is ready: a voter that knows the leader and
	// has applied what was committed when it started.
	for _, n := range q.nodes {
		if err := waitReady(n); err != nil {
			return err
		}
	}
	leader, err := q.waitLeader(10 * time.Second)
	if err != nil {
		return err
	}
	for i, n := range q.nodes {
		role := "follower"
		if i == leader {
			role = "leader"
		}
		fmt.Printf("  %s  raft %-15s  api http://%-15s  %s\n", n.ID(), n.RaftAddr(), n.APIAddr(), role)
	}
	return nil
}

// start starts node i with cfg and remembers the addresses it bound, so a
// restart comes back on the same raft address its peers know.
func (q *quickstart) start(i int, cfg cluster.Config) error {
	n, err := cluster.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	cfg.RaftAddr, cfg.HTTPAddr = n.RaftAddr(), n.APIAddr()
	q.nodes[i], q.cfgs[i] = n, cfg
	return nil
}

// race has 50 clients, each talking HTTP to one of the three nodes, try to
// create all 10 ids in a random order.
func (q *quickstart) race() error {
	fmt.Printf("\n1. %d clients race to create the same %d ids through all 3 nodes\n", clients, ids)
	var mu sync.Mutex
	wins := map[string][]int{}
	var failures []error
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			api, err := client.New([]string{q.nodes[c%3].APIAddr()})
			if err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
				return
			}
			defer api.Close()
			nc := api.Nodes()
			for _, k := range rand.Perm(ids) {
				id := fmt.Sprintf("concept-%d", k+1)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := nc.Create(ctx, client.CreateRequest{
					NodeID: id, Labels: []string{"concept"},
					Properties: map[string]any{"owner": fmt.Sprintf("client-%d", c), "fence": 1},
				})
				cancel()
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else if res.Created {
					wins[id] = append(wins[id], c)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		return fmt.Errorf("%d create calls failed, first: %w", len(failures), failures[0])
	}
	exact := 0
	for k := 1; k <= ids; k++ {
		if len(wins[fmt.Sprintf("concept-%d", k)]) == 1 {
			exact++
		}
	}
	fmt.Printf("   %d calls in %v; ids with exactly one winner: %d/%d\n", clients*ids, time.Since(start).Round(time.Millisecond), exact, ids)
	if exact != ids {
		return fmt.Errorf("winners per id: %v", wins)
	}
	fmt.Printf("   concept-1 went to client-%d; the other %d callers were told who won\n", wins["concept-1"][0], clients-1)
	return nil
}

// failover stops the leader and shows the new one serving fenced updates.
func (q *quickstart) failover() (int, error) {
	old, err := q.waitLeader(5 * time.Second)
	if err != nil {
		return 0, err
	}
	fmt.Printf("\n2. stopping the leader %s\n", q.nodes[old].ID())
	start := time.Now()
	if err := q.nodes[old].Close(); err != nil {
		return 0, err
	}
	q.nodes[old] = nil
	leader, err := q.waitLeader(15 * time.Second)
	if err != nil {
		return 0, err
	}
	fmt.Printf("   %s is the new leader after %v\n", q.nodes[leader].ID(), time.Since(start).Round(time.Millisecond))

	follower := q.nodes[3-old-leader]
	nc := nodes.On(follower)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	won, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "concept-1",
		Conditions: map[string]any{"fence": 1}, Updates: map[string]any{"fence": 2, "state": "materialized"}})
	if err != nil {
		return 0, err
	}
	stale, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "concept-1",
		Conditions: map[string]any{"fence": 1}, Updates: map[string]any{"fence": 2, "state": "stolen"}})
	if err != nil {
		return 0, err
	}
	fmt.Printf("   CAS fence 1->2 via %s: swapped=%v (version %d); a second holder of fence 1: swapped=%v\n",
		follower.ID(), won.Swapped, won.Node.Version, stale.Swapped)
	if !won.Swapped || stale.Swapped || string(stale.Node.Properties["state"]) != `"materialized"` {
		return 0, errors.New("the fenced update did not behave")
	}
	return old, nil
}

// rejoin restarts the stopped node on its data and waits until its state
// hash equals the others' at the same index.
func (q *quickstart) rejoin(i int) error {
	fmt.Printf("\n3. restarting %s on its data directory\n", q.cfgs[i].ID)
	start := time.Now()
	if err := q.start(i, q.cfgs[i]); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		h := make([]cluster.StateHash, 3)
		same := true
		for k, n := range q.nodes {
			var err error
			if h[k], err = n.StateHash(); err != nil {
				return err
			}
			same = same && h[k] == h[0]
		}
		if same {
			fmt.Printf("   caught up in %v: all 3 nodes at index %d with state hash %s…\n",
				time.Since(start).Round(time.Millisecond), h[0].Index, h[0].Hash[:16])
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not catch up: %v", q.cfgs[i].ID, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	node, err := nodes.On(q.nodes[i]).Get(context.Background(), "concept-1", fsm.Stale)
	if err != nil {
		return err
	}
	fmt.Printf("   its local copy of concept-1: fence %s, state %s, version %d\n",
		node.Properties["fence"], node.Properties["state"], node.Version)
	if string(node.Properties["fence"]) != "2" {
		return errors.New("the restarted node missed the update")
	}
	return nil
}

// waitLeader waits until a running node leads and every running node
// agrees on it.
func (q *quickstart) waitLeader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		leader := -1
		agreed := true
		for i, n := range q.nodes {
			if n == nil {
				continue
			}
			if n.IsLeader() {
				leader = i
			}
		}
		for _, n := range q.nodes {
			if n != nil && leader >= 0 && n.Status().LeaderID != q.nodes[leader].ID() {
				agreed = false
			}
		}
		if leader >= 0 && agreed {
			return leader, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1, errors.New("no leader elected in time")
}

// waitReady waits, at most 10 s, until n is ready (cluster.Node.WaitReady).
func waitReady(n *cluster.Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.WaitReady(ctx)
}

func (q *quickstart) stopAll() {
	for _, n := range q.nodes {
		if n != nil {
			_ = n.Shutdown(context.Background())
		}
	}
	if q.dir != "" {
		_ = os.RemoveAll(q.dir)
	}
}
