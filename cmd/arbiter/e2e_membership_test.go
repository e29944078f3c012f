//go:build unix

package main

// Multi-process tests of membership: what one wrong flag used to break
// (issue 17), replayed against real `arbiter serve` processes.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// e2eRefusalBound bounds how long a refused start may take: a refusal is
// decided before raft runs, or at the first answer of the cluster.
const e2eRefusalBound = 15 * time.Second

// TestE2EMembershipFlags runs three processes and, beside them, a
// one-node cluster, and replays each finding of issue 17:
//
//   - a second process with the leader's --id (new addresses, joining) is
//     refused, and the leader's member entry and the leader API address
//     every node reports stay as they were;
//   - a node with an empty data directory and neither --bootstrap nor
//     --join is refused, naming both, and creates nothing;
//   - a node once started with --bootstrap (a forgotten --join) and later
//     restarted with --join naming another cluster is refused, naming its
//     own cluster;
//   - joining a member that never starts leaves the one-node cluster
//     writable (it joins as a non-voter), and it can be removed;
//   - a member restarted on other addresses is refused without
//     --change-address, naming both, and moved with it (after which its
//     new addresses are the recorded ones);
//   - a removed member notices, logs it and exits non-zero.
func TestE2EMembershipFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	began := time.Now()
	phase := func(name string, since time.Time) {
		t.Helper()
		t.Logf("%-44s %6v (t=%v)", name, time.Since(since).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	}
	cl := startE2ECluster(ctx, t)
	x1 := cl.extraNode("x1", "--bootstrap") // a cluster of its own
	x1.start(t, cl.bin)
	cl.waitReady(ctx, x1, 20*time.Second)
	phase("clusters up", began)

	p := time.Now()
	e2eDuplicateIDRefused(ctx, t, cl)
	phase("duplicate --id refused", p)

	p = time.Now()
	lost := cl.extraNode("n9") // neither --bootstrap nor --join
	cl.expectRefused(lost, e2eRefusalBound, "--bootstrap", "--join")
	if _, err := os.Stat(lost.dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused start created its data directory %s: %v", lost.dataDir, err)
	}
	phase("no --bootstrap, no --join refused", p)

	p = time.Now()
	e2eGhostJoinKeepsQuorum(ctx, t, cl, x1)
	phase("join of a member that never starts", p)

	p = time.Now()
	e2eForeignJoinRefused(ctx, t, cl, x1)
	phase("--join naming another cluster refused", p)

	p = time.Now()
	e2eAddressChange(ctx, t, cl)
	phase("address change refused, then made", p)

	p = time.Now()
	e2eRemovedMemberStops(ctx, t, cl)
	phase("removed member stops", p)
}

// e2eDuplicateIDRefused starts a process with the leader's id, fresh
// data and new addresses, joining through a follower.
func e2eDuplicateIDRefused(ctx context.Context, t *testing.T, cl *e2eCluster) {
	leader, _ := cl.leader(ctx, nil)
	before, err := cl.c.status(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	want := *before.member(leader.id)
	dup := cl.extraNode(leader.id+"-dup", "--join", cl.others(leader)[0].url())
	dup.setFlag("--id", leader.id)
	cl.expectRefused(dup, e2eRefusalBound, "member "+leader.id+" already exists", "--replace", want.RaftAddr)
	for _, n := range cl.nodes {
		st, err := cl.c.status(ctx, n)
		if err != nil {
			t.Fatalf("status of %s: %v", n.id, err)
		}
		if m := st.member(leader.id); m == nil || *m != want {
			t.Errorf("%s: member %s is %+v after the duplicate's attempt, want %+v", n.id, leader.id, m, want)
		}
		if st.LeaderID == leader.id && st.LeaderAPIAddr != leader.httpAddr {
			t.Errorf("%s names leader API address %s, want %s", n.id, st.LeaderAPIAddr, leader.httpAddr)
		}
		if len(st.Members) != e2eNodes {
			t.Errorf("%s sees members %+v after the duplicate's attempt", n.id, st.Members)
		}
	}
}

// e2eGhostJoinKeepsQuorum joins, on the one-node cluster x1, a member at
// addresses where nothing runs: it must be a non-voter, and writes, a
// backup and its removal must still succeed.
func e2eGhostJoinKeepsQuorum(ctx context.Context, t *testing.T, cl *e2eCluster, x1 *e2eNode) {
	ports := e2eFreePorts(t, 2)
	ghost := map[string]string{"id": "ghost", "raft_addr": fmt.Sprintf("127.0.0.1:%d", ports[0]), "api_addr": fmt.Sprintf("127.0.0.1:%d", ports[1])}
	if err := cl.c.call(ctx, http.MethodPost, x1.url()+"/v1/cluster/join", ghost, nil); err != nil {
		t.Fatalf("join of a member that never starts: %v", err)
	}
	st, err := cl.c.status(ctx, x1)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.member("ghost"); m == nil || m.Voter {
		t.Fatalf("after its join, ghost is %+v, want a non-voter", m)
	}
	for i := range 3 {
		id := fmt.Sprintf("with-ghost-%d", i)
		var r e2eCreateReply
		if err := cl.c.call(ctx, http.MethodPost, x1.url()+"/v1/nodes/create", e2eCreateReq{NodeID: id, IdempotencyKey: id}, &r); err != nil || !r.Created {
			t.Fatalf("write %d with a ghost member: created=%v, %v", i, r.Created, err)
		}
	}
	sctx, scancel := context.WithTimeout(ctx, e2eCallTimeout)
	defer scancel()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, x1.url()+"/v1/cluster/snapshot", nil)
	if resp, err := cl.c.hc.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("backup with a ghost member: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if err := cl.c.call(ctx, http.MethodPost, x1.url()+"/v1/cluster/remove", map[string]string{"id": "ghost"}, nil); err != nil {
		t.Fatalf("remove of the ghost member: %v", err)
	}
	if st, err = cl.c.status(ctx, x1); err != nil || len(st.Members) != 1 {
		t.Fatalf("after the ghost's removal: %+v %v", st, err)
	}
}

// e2eForeignJoinRefused restarts x1, a node that bootstrapped a cluster of
// its own, with --join naming the three: it must refuse, naming both
// clusters, and start again as it was without --join.
func e2eForeignJoinRefused(ctx context.Context, t *testing.T, cl *e2eCluster, x1 *e2eNode) {
	stX, err := cl.c.status(ctx, x1)
	if err != nil {
		t.Fatal(err)
	}
	stMain, err := cl.c.status(ctx, cl.nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if stX.ClusterID == "" || stMain.ClusterID == "" || stX.ClusterID == stMain.ClusterID {
		t.Fatalf("cluster ids %q (x1) and %q (the three): want two different ones", stX.ClusterID, stMain.ClusterID)
	}
	x1.signal(t, syscall.SIGTERM)
	if st := x1.waitExit(e2eExitTimeout); st == nil || !st.Success() {
		t.Fatalf("x1 did not exit 0 after SIGTERM: %v", st)
	}
	x1.dropFlag("--bootstrap", true)
	x1.setFlag("--join", cl.nodes[1].url())
	cl.expectRefused(x1, e2eRefusalBound, "cluster "+stX.ClusterID, "cluster "+stMain.ClusterID, "--join")
	for _, n := range cl.nodes {
		if st, err := cl.c.status(ctx, n); err != nil || st.member("x1") != nil {
			t.Errorf("%s after x1's refused join: %+v %v", n.id, st, err)
		}
	}
	x1.dropFlag("--join", false)
	x1.start(t, cl.bin)
	cl.waitReady(ctx, x1, 20*time.Second)
	if st, err := cl.c.status(ctx, x1); err != nil || st.ClusterID != stX.ClusterID {
		t.Errorf("x1 restarted without --join: %+v %v, want its own cluster %s", st, err, stX.ClusterID)
	}
}

// e2eAddressChange restarts a follower on new ports: refused without
// --change-address, then moved with it, and afterwards restarted on its
// new ports without the flag.
func e2eAddressChange(ctx context.Context, t *testing.T, cl *e2eCluster) {
	leader, _ := cl.leader(ctx, nil)
	f := cl.others(leader)[1]
	oldRaft, oldHTTP := f.flag("--raft-addr"), f.httpAddr
	f.signal(t, syscall.SIGTERM)
	if st := f.waitExit(e2eExitTimeout); st == nil || !st.Success() {
		t.Fatalf("%s did not exit 0 after SIGTERM: %v", f.id, st)
	}
	ports := e2eFreePorts(t, 2)
	newRaft, newHTTP := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	f.setFlag("--raft-addr", newRaft)
	f.setFlag("--http-addr", newHTTP)
	cl.expectRefused(f, e2eRefusalBound, oldRaft, oldHTTP, newRaft, newHTTP, "--change-address")

	f.args = append(f.args, "--change-address")
	f.start(t, cl.bin)
	cl.eventually(ctx, 20*time.Second, f.id+" moved to its new addresses", func() (bool, string) {
		if !f.running() {
			t.Fatalf("%s exited while moving: %v\n%s", f.id, f.proc.err, f.currentLog(t))
		}
		st, err := cl.c.status(ctx, leader)
		if err != nil {
			return false, err.Error()
		}
		m := st.member(f.id)
		if m == nil || m.RaftAddr != newRaft || m.APIAddr != newHTTP || !m.Voter {
			return false, fmt.Sprintf("the leader sees %+v", m)
		}
		return cl.c.call(ctx, http.MethodGet, f.url()+"/readyz", nil, nil) == nil, f.id + " not ready"
	})
	var r e2eCreateReply
	if err := cl.c.call(ctx, http.MethodPost, f.url()+"/v1/nodes/create", e2eCreateReq{NodeID: "after-move", IdempotencyKey: "after-move"}, &r); err != nil || !r.Created {
		t.Fatalf("write through the moved %s: created=%v, %v", f.id, r.Created, err)
	}
	// The record follows the move: the new addresses need no flag now.
	cl.eventually(ctx, 10*time.Second, f.id+"'s record names its new addresses", func() (bool, string) {
		b, err := os.ReadFile(f.dataDir + "/member.json")
		return err == nil && strings.Contains(string(b), newRaft) && strings.Contains(string(b), newHTTP), string(b)
	})
	f.signal(t, syscall.SIGTERM)
	if st := f.waitExit(e2eExitTimeout); st == nil || !st.Success() {
		t.Fatalf("%s did not exit 0 after SIGTERM: %v", f.id, st)
	}
	f.dropFlag("--change-address", true)
	f.start(t, cl.bin)
	cl.waitReady(ctx, f, 20*time.Second)
	cl.checkResumed(ctx, t, f)
}

// e2eRemovedMemberStops removes a follower through the leader: the
// follower exits non-zero, saying so, and the two others keep serving.
func e2eRemovedMemberStops(ctx context.Context, t *testing.T, cl *e2eCluster) {
	leader, _ := cl.leader(ctx, nil)
	victim := cl.others(leader)[0]
	if err := cl.c.call(ctx, http.MethodPost, leader.url()+"/v1/cluster/remove", map[string]string{"id": victim.id}, nil); err != nil {
		t.Fatalf("remove %s: %v", victim.id, err)
	}
	st := victim.waitExit(10 * time.Second)
	if st == nil {
		t.Fatalf("removed %s still runs 10s after its removal; its log:\n%s", victim.id, victim.currentLog(t))
	}
	if st.Success() {
		t.Errorf("removed %s exited 0, want non-zero", victim.id)
	}
	if log := victim.currentLog(t); !strings.Contains(log, "was removed from") {
		t.Errorf("removed %s did not say why it stopped:\n%s", victim.id, log)
	}
	rest := cl.others(victim)
	var r e2eCreateReply
	if _, err := cl.c.write(ctx, rest, "/v1/nodes/create", e2eCreateReq{NodeID: "after-remove", IdempotencyKey: "after-remove"}, &r); err != nil || !r.Created {
		t.Fatalf("write after the removal: created=%v, %v", r.Created, err)
	}
	for _, n := range rest {
		if st, err := cl.c.status(ctx, n); err != nil || len(st.Members) != e2eNodes-1 || st.member(victim.id) != nil {
			t.Errorf("%s after the removal: %+v %v", n.id, st, err)
		}
	}
}
