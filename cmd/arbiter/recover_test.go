package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster/offline"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/chaos"
	"github.com/arbiterhq/arbiter/nodes"
)

// recoverFaults is how many fault kinds, of every kind in a seeded order,
// the harness injects into the recovered cluster: about half, to keep the
// suite's time (internal/chaos runs them all on new clusters; a failure
// here names its seed).
const recoverFaults = 6

// TestRecoverFromQuorumLoss: a 3-node cluster acknowledges writes; one
// follower, holding all of them, is then cut off while the two others
// acknowledge more; those two are destroyed for good (stopped, data
// deleted). `arbiter recover` on the survivor's data directory makes it a
// cluster of one: every write it held is readable, the writes only the
// destroyed members held are gone (what the README says recovery can
// lose), two new members join (as non-voters, then voters), and the fault
// harness passes on the recovered cluster.
func TestRecoverFromQuorumLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	seed := uint64(time.Now().UnixNano())
	cfg := chaos.Config{Workload: chaos.Nodes{}, TCP: true, Seed: seed, Faults: chaos.Schedule(seed)[:recoverFaults]}
	c := chaos.NewCluster(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// write creates n nodes through the leader; each is acknowledged, after
	// retries with its idempotency key if a leader change leaves an
	// outcome unknown.
	write := func(prefix string, n int) []string {
		t.Helper()
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s-%02d", prefix, i)
			deadline := time.Now().Add(20 * time.Second)
			for {
				node := c.Node(c.WaitLeader(10 * time.Second))
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				res, err := nodes.On(node).CreateIfAbsent(wctx, nodes.CreateRequest{NodeID: id, Labels: []string{"recovery"}, IdempotencyKey: id})
				wcancel()
				if err == nil && res.Created {
					break
				}
				if errs.CodeOf(err) != errs.CodeUnavailable || time.Now().After(deadline) {
					t.Fatalf("create %s: %+v %v", id, res, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			ids = append(ids, id)
		}
		return ids
	}
	acked := write("acked", 30)
	leader := c.WaitLeader(10 * time.Second)
	survivor := (leader + 1) % c.Size()
	var others []int
	for i := range c.Size() {
		if i != survivor {
			others = append(others, i)
		}
	}
	commit := c.Node(leader).Raft().CommitIndex()
	if !c.Eventually(10*time.Second, func() bool { return c.Node(survivor).FSM().AppliedIndex() >= commit }) {
		t.Fatalf("n%d never applied the acknowledged writes (commit index %d)", survivor+1, commit)
	}
	// The survivor falls behind: the others acknowledge writes it never sees.
	c.Isolate(survivor)
	lost := write("lost", 10)

	// Two members are destroyed for good; the survivor is stopped.
	survivorID, survivorRaft := c.Node(survivor).ID(), c.Node(survivor).RaftAddr()
	for _, i := range others {
		c.Stop(i)
		if err := os.RemoveAll(c.DataDir(i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Stop(survivor)
	c.Heal()

	// arbiter recover, as an operator runs it.
	membersFile := filepath.Join(t.TempDir(), "members.json")
	body, _ := json.Marshal([]offline.RecoverMember{{ID: survivorID, RaftAddr: survivorRaft}})
	if err := os.WriteFile(membersFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "", "recover", "--data-dir", c.DataDir(survivor), "--members", membersFile); r.status != 0 {
		t.Fatalf("arbiter recover: %+v", r)
	}
	// A second run on the recovered directory is harmless: the same
	// configuration again.
	if r := runCLI(t, nil, "", "recover", "--data-dir", c.DataDir(survivor), "--members", membersFile); r.status != 0 {
		t.Fatalf("arbiter recover, again: %+v", r)
	}

	c.Restart(survivor)
	if l := c.WaitLeader(20 * time.Second); l != survivor {
		t.Fatalf("the recovered cluster is led by n%d, want the survivor n%d", l+1, survivor+1)
	}
	// read reads id linearizably, through the leader, retrying while
	// the cluster is unavailable (a leader change).
	read := func(id string) error {
		deadline := time.Now().Add(20 * time.Second)
		for {
			n := c.Node(c.WaitLeader(10 * time.Second))
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := nodes.On(n).Get(rctx, id, fsm.Linearizable)
			rcancel()
			if errs.CodeOf(err) != errs.CodeUnavailable || time.Now().After(deadline) {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, id := range acked {
		if err := read(id); err != nil {
			t.Errorf("LOST: acknowledged %s, held by the survivor, after recovery: %v", id, err)
		}
	}
	for _, id := range lost {
		if err := read(id); !errors.Is(err, errs.NotFound) {
			t.Errorf("%s, held only by the destroyed members, after recovery: %v, want not_found", id, err)
		}
	}
	if st := c.Node(survivor).Status(); len(st.Members) != 1 || !st.Members[0].Voter {
		t.Fatalf("the recovered cluster's members: %+v, want the survivor alone", st.Members)
	}

	// Two new members (empty data directories) join it.
	for _, i := range others {
		c.Restart(i)
	}
	c.WaitVoters(20 * time.Second)
	c.WaitConverged(20 * time.Second)
	if got := len(c.Node(c.WaitLeader(10 * time.Second)).Status().Members); got != 3 {
		t.Fatalf("%d members after two joined the recovered cluster, want 3", got)
	}

	report := chaos.RunOn(t, c, cfg)
	t.Logf("fault harness on the recovered cluster: %s", report)
	for _, id := range acked {
		if err := read(id); err != nil {
			t.Errorf("LOST after the fault harness: acknowledged %s: %v", id, err)
		}
	}
}
