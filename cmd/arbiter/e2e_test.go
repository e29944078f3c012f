//go:build unix

package main

// Multi-process end-to-end tests: real `arbiter serve` processes on
// 127.0.0.1, driven over HTTP, killed with SIGKILL and SIGTERM. Skipped
// under -short. Each test bounds itself well under a minute on two cores.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/seed"
)

const (
	e2eRaceWriters  = 8  // goroutines racing to create the same ids
	e2eRaceIDs      = 20 // ids they race for
	e2eCASRacers    = 12 // goroutines racing to move the fence 1 -> 2
	e2eLoadWriters  = 4  // create writers running across the leader kill
	e2eMinPreKill   = 12 // acknowledged load writes before the kill
	e2eMinPostElect = 24 // acknowledged load writes after the new leader
	e2eWriteBound   = 20 * time.Second
)

// TestE2ELeaderCrash runs three processes, races creates and a CAS through
// all of them, SIGKILLs the leader while writes are in flight, keeps
// writing through the survivors, restarts the killed node on its data, and
// then checks that every acknowledged write is on every node (stale and
// linearizable reads) and that the three state hashes agree.
func TestE2ELeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	began := time.Now()
	phase := func(name string, since time.Time) {
		t.Helper()
		t.Logf("%-34s %6v (t=%v)", name, time.Since(since).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	}

	cl := startE2ECluster(ctx, t)
	phase("cluster up", began)

	// acked maps every acknowledged write's node id to what it must hold.
	acked := map[string]e2eProps{}

	p := time.Now()
	seed := seed.For(t)
	e2eCreateRace(ctx, t, cl, seed, acked)
	phase("create race", p)

	p = time.Now()
	e2eCASRace(ctx, t, cl, acked)
	phase("CAS race", p)

	p = time.Now()
	killed, load := e2eKillLeaderUnderLoad(ctx, t, cl)
	for id, want := range load.acked {
		acked[id] = want
	}
	phase("SIGKILL leader under load", p)
	t.Logf("load: %d acknowledged creates (%d before the kill, %d after the new leader, %d needed retries), %d abandoned; chain at %d (abandoned=%v); new leader %s after %v",
		len(load.acked), load.preKill, load.postElect, load.retried, load.abandoned, load.chain, load.chainAbandoned, load.newLeader, load.election.Round(time.Millisecond))
	if t.Failed() {
		t.FailNow()
	}

	p = time.Now()
	e2eRestartAndCatchUp(ctx, t, cl, killed)
	phase("restart and catch up", p)

	p = time.Now()
	chainWant := e2eProps{"n": e2eJSON(load.chain)}
	e2eVerifyEverywhere(ctx, t, cl, acked, func(n *e2eNodeReply) string {
		got := string(n.Properties["n"])
		if got == chainWant["n"] || (load.chainAbandoned && got == e2eJSON(load.chain+1)) {
			return ""
		}
		return fmt.Sprintf("chain n=%s, want %s (abandoned step: %v)", got, chainWant["n"], load.chainAbandoned)
	})
	phase(fmt.Sprintf("verify %d writes on 3 nodes", len(acked)+1), p)

	p = time.Now()
	e2eCompareStateHashes(ctx, t, cl)
	phase("state hashes", p)
}

// e2eCreateRace has e2eRaceWriters goroutines create each of the
// e2eRaceIDs ids, in their own shuffled order and through different nodes;
// exactly one call per id may report created, and every call must see the
// winner's node.
func e2eCreateRace(ctx context.Context, t *testing.T, cl *e2eCluster, seed uint64, acked map[string]e2eProps) {
	t.Logf("create race seed %d", seed)
	type outcome struct {
		writer  string
		created bool
		stored  string // writer property of the node returned
	}
	var mu sync.Mutex
	outcomes := map[string][]outcome{}
	var wg sync.WaitGroup
	for g := range e2eRaceWriters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			order := rng.Perm(e2eRaceIDs)
			writer := fmt.Sprintf("g%d", g)
			for i, k := range order {
				id := fmt.Sprintf("race-%02d", k)
				nodes := e2eRotate(cl.nodes, g+i)
				req := e2eCreateReq{NodeID: id, Labels: []string{"race"}, Properties: map[string]any{"writer": writer},
					IdempotencyKey: id + "-" + writer}
				var res e2eCreateReply
				wctx, cancel := context.WithTimeout(ctx, e2eWriteBound)
				_, err := cl.c.write(wctx, nodes, "/v1/nodes/create", req, &res)
				cancel()
				if err != nil {
					t.Errorf("create %s by %s: %v", id, writer, err)
					continue
				}
				mu.Lock()
				outcomes[id] = append(outcomes[id], outcome{writer, res.Created, string(res.Node.Properties["writer"])})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for k := range e2eRaceIDs {
		id := fmt.Sprintf("race-%02d", k)
		var winners []string
		for _, o := range outcomes[id] {
			if o.created {
				winners = append(winners, o.writer)
			}
		}
		if len(winners) != 1 {
			t.Errorf("%s: %d callers got created=true (%v), want exactly 1", id, len(winners), winners)
			continue
		}
		want := e2eJSON(winners[0])
		for _, o := range outcomes[id] {
			if o.stored != want {
				t.Errorf("%s: %s was shown writer %s, but %s created it", id, o.writer, o.stored, winners[0])
			}
		}
		acked[id] = e2eProps{"writer": want}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// e2eCASRace creates fence-lock at fence 1 and has e2eCASRacers goroutines try
// to move it to 2, each through a node of its own; exactly one may swap.
// It also creates the chain node the load phase increments.
func e2eCASRace(ctx context.Context, t *testing.T, cl *e2eCluster, acked map[string]e2eProps) {
	for _, req := range []e2eCreateReq{
		{NodeID: "fence-lock", Labels: []string{"lock"}, Properties: map[string]any{"fence": 1}, IdempotencyKey: "fence-lock"},
		{NodeID: "chain", Labels: []string{"chain"}, Properties: map[string]any{"n": 0}, IdempotencyKey: "chain"},
	} {
		var res e2eCreateReply
		if _, err := cl.c.write(ctx, cl.nodes, "/v1/nodes/create", req, &res); err != nil || !res.Created {
			t.Fatalf("create %s: created=%v, %v", req.NodeID, res.Created, err)
		}
	}
	var wg sync.WaitGroup
	replies := make([]*e2eCASReply, e2eCASRacers)
	gate := make(chan struct{})
	for g := range e2eCASRacers {
		wg.Go(func() {
			holder := fmt.Sprintf("g%d", g)
			req := e2eCASReq{NodeID: "fence-lock", Conditions: map[string]any{"fence": 1},
				Updates: map[string]any{"fence": 2, "holder": holder}, IdempotencyKey: "fence-" + holder}
			var res e2eCASReply
			<-gate
			wctx, cancel := context.WithTimeout(ctx, e2eWriteBound)
			defer cancel()
			if _, err := cl.c.write(wctx, e2eRotate(cl.nodes, g), "/v1/nodes/cas", req, &res); err != nil {
				t.Errorf("CAS by %s: %v", holder, err)
				return
			}
			replies[g] = &res
		})
	}
	close(gate)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var winners []string
	for g, r := range replies {
		if r.Swapped {
			winners = append(winners, fmt.Sprintf("g%d", g))
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d CAS callers swapped fence 1->2 (%v), want exactly 1", len(winners), winners)
	}
	want := e2eProps{"fence": "2", "holder": e2eJSON(winners[0])}
	for g, r := range replies {
		if d := want.check(&r.Node); d != "" {
			t.Errorf("CAS by g%d (swapped=%v) returned %s", g, r.Swapped, d)
		}
	}
	acked["fence-lock"] = want
}

type e2eLoad struct {
	acked          map[string]e2eProps
	abandoned      int // create writes never acknowledged (outcome unknown)
	retried        int // create writes acknowledged after more than one attempt
	preKill        int
	postElect      int
	chain          int  // last acknowledged value of chain.n
	chainAbandoned bool // the step after chain was never acknowledged
	newLeader      string
	election       time.Duration
}

// e2eKillLeaderUnderLoad runs e2eLoadWriters create writers and one CAS chain
// writer against the two non-leaders, SIGKILLs the leader once some writes
// are acknowledged, and keeps writing until a new leader has acknowledged
// more. Every write carries an idempotency key and is retried through the
// survivors on 503s and transport errors; only 200 replies count.
func e2eKillLeaderUnderLoad(ctx context.Context, t *testing.T, cl *e2eCluster) (*e2eNode, *e2eLoad) {
	leader, term := cl.leader(ctx, nil)
	survivors := cl.others(leader)
	t.Logf("leader is %s in term %d; writing through %s and %s", leader.id, term, survivors[0].id, survivors[1].id)

	res := &e2eLoad{acked: map[string]e2eProps{}}
	var mu sync.Mutex
	var total atomic.Int64
	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	for w := range e2eLoadWriters {
		wg.Go(func() {
			writer := fmt.Sprintf("w%d", w)
			for seq := 0; !stopped(); seq++ {
				id := fmt.Sprintf("load-%s-%03d", writer, seq)
				req := e2eCreateReq{NodeID: id, Labels: []string{"load"},
					Properties: map[string]any{"writer": writer, "seq": seq}, IdempotencyKey: id}
				var r e2eCreateReply
				wctx, cancel := context.WithTimeout(ctx, e2eWriteBound)
				attempts, err := cl.c.write(wctx, e2eRotate(survivors, w+seq), "/v1/nodes/create", req, &r)
				cancel()
				mu.Lock()
				switch {
				case err != nil:
					res.abandoned++
					t.Logf("%s not acknowledged after %d attempts: %v", id, attempts, err)
				case !r.Created:
					// The id is unique and keyed: a retry must replay
					// this call's own created=true.
					t.Errorf("%s: created=false (replayed=%v) after %d attempts; node %+v", id, r.Replayed, attempts, r.Node)
				default:
					if attempts > 1 {
						res.retried++
					}
					res.acked[id] = e2eProps{"writer": e2eJSON(writer), "seq": e2eJSON(seq)}
					total.Add(1)
				}
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for k := 0; !stopped(); k++ {
			req := e2eCASReq{NodeID: "chain", Conditions: map[string]any{"n": k}, Updates: map[string]any{"n": k + 1},
				IdempotencyKey: fmt.Sprintf("chain-%d", k)}
			var r e2eCASReply
			wctx, cancel := context.WithTimeout(ctx, e2eWriteBound)
			_, err := cl.c.write(wctx, e2eRotate(survivors, k), "/v1/nodes/cas", req, &r)
			cancel()
			mu.Lock()
			if err != nil {
				res.chainAbandoned = true
				t.Logf("chain %d->%d not acknowledged: %v", k, k+1, err)
			} else if !r.Swapped {
				t.Errorf("chain %d->%d: swapped=false (replayed=%v); node %s", k, k+1, r.Replayed, e2eRaw(r.Node.Properties))
			} else {
				res.chain = k + 1
			}
			mu.Unlock()
			if err != nil || !r.Swapped {
				return // the chain's next condition is unknown
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	waitCount := func(what string, n int64) {
		cl.eventually(ctx, 15*time.Second, what, func() (bool, string) {
			return total.Load() >= n, fmt.Sprintf("%d acknowledged", total.Load())
		})
	}
	waitCount("load writes before the kill", e2eMinPreKill)
	res.preKill = int(total.Load())
	leader.signal(t, syscall.SIGKILL)
	killedAt := time.Now()
	if leader.waitExit(5*time.Second) == nil {
		t.Fatalf("%s still running 5s after SIGKILL", leader.id)
	}
	t.Logf("SIGKILLed %s with %d writes acknowledged", leader.id, res.preKill)

	newLeader, newTerm := cl.leader(ctx, leader)
	res.newLeader, res.election = newLeader.id, time.Since(killedAt)
	if newTerm <= term {
		t.Errorf("new leader %s in term %d, not after term %d", newLeader.id, newTerm, term)
	}
	base := total.Load()
	waitCount("load writes after the new leader", base+e2eMinPostElect)
	res.postElect = int(total.Load() - base)
	return leader, res
}

// e2eRestartAndCatchUp restarts n with its original flags on its data
// directory. It must resume its membership (not bootstrap a new cluster),
// become ready, and apply at least the leader's commit index.
func e2eRestartAndCatchUp(ctx context.Context, t *testing.T, cl *e2eCluster, n *e2eNode) {
	cl.c.hc.CloseIdleConnections()
	n.start(t, cl.bin)
	cl.waitReady(ctx, n, 20*time.Second)
	cl.checkResumed(ctx, t, n)
	st, err := cl.c.status(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != e2eNodes || st.LeaderID == "" {
		t.Fatalf("restarted %s sees %d members and leader %q, want %d and a leader: %+v", n.id, len(st.Members), st.LeaderID, e2eNodes, st)
	}
	leader, _ := cl.leader(ctx, nil)
	lst, err := cl.c.status(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	target := lst.CommitIndex
	cl.eventually(ctx, 15*time.Second, fmt.Sprintf("%s caught up to the leader's commit index %d", n.id, target), func() (bool, string) {
		h, err := cl.c.stateHash(ctx, n)
		if err != nil {
			return false, err.Error()
		}
		return h.Index >= target, fmt.Sprintf("state-hash index %d", h.Index)
	})
	t.Logf("restarted %s resumed as %s in term %d and caught up to index %d (leader %s)", n.id, st.State, st.Term, target, leader.id)
}

// e2eVerifyEverywhere reads every acknowledged write from every node: stale
// reads (polled, since a follower may lag), then linearizable reads, which
// must see the write at once (retried only on 503s and transport errors).
// The chain node is checked with chainOK.
func e2eVerifyEverywhere(ctx context.Context, t *testing.T, cl *e2eCluster, acked map[string]e2eProps, chainOK func(*e2eNodeReply) string) {
	ids := make([]string, 0, len(acked)+1)
	for id := range acked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = append(ids, "chain")
	check := func(id string, got *e2eNodeReply) string {
		if id == "chain" {
			return chainOK(got)
		}
		return acked[id].check(got)
	}
	var wg sync.WaitGroup
	for _, n := range cl.nodes {
		wg.Go(func() {
			deadline := time.Now().Add(15 * time.Second)
			lost := 0
			for _, id := range ids {
				for {
					got, err := cl.c.get(ctx, n, id, true)
					why := ""
					if err != nil {
						why = err.Error()
					} else {
						why = check(id, got)
					}
					if why == "" {
						break
					}
					if time.Now().After(deadline) || ctx.Err() != nil {
						t.Errorf("LOST: stale read of acknowledged %s on %s: %s", id, n.id, why)
						lost++
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			for _, id := range ids {
				var got *e2eNodeReply
				var err error
				for {
					got, err = cl.c.get(ctx, n, id, false)
					if err == nil || !e2eRetryable(err) || time.Now().After(deadline) {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				why := ""
				if err != nil {
					why = err.Error()
				} else {
					why = check(id, got)
				}
				if why != "" {
					t.Errorf("LOST: linearizable read of acknowledged %s through %s: %s", id, n.id, why)
					lost++
				}
			}
			t.Logf("%s: %d ids read stale and linearizable, %d lost", n.id, len(ids), lost)
		})
	}
	wg.Wait()
}

// e2eCompareStateHashes polls the three state hashes until they report the
// same applied index; at the same index the hashes must be equal.
func e2eCompareStateHashes(ctx context.Context, t *testing.T, cl *e2eCluster) {
	var seen []string
	cl.eventually(ctx, 30*time.Second, "three state hashes at one index", func() (bool, string) {
		// Ticks keep every node applying, and hashing a large state takes
		// longer than a tick: ask each node for its state as of the same
		// index just ahead of all of them.
		var target uint64
		for _, n := range cl.nodes {
			st, err := cl.c.status(ctx, n)
			if err != nil {
				return false, err.Error()
			}
			target = max(target, st.AppliedIndex)
		}
		target += 2
		hs := make([]*e2eHashReply, len(cl.nodes))
		oks := make([]bool, len(cl.nodes))
		errs := make([]error, len(cl.nodes))
		var wg sync.WaitGroup
		for i, n := range cl.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hs[i], oks[i], errs[i] = cl.c.stateHashAt(ctx, n, target)
			}()
		}
		wg.Wait()
		seen = seen[:0]
		for i, n := range cl.nodes {
			if errs[i] != nil || !oks[i] {
				return false, fmt.Sprintf("%s has no state of its own at index %d: %v", n.id, target, errs[i])
			}
			seen = append(seen, fmt.Sprintf("%s index %d hash %s", n.id, hs[i].Index, hs[i].Hash))
		}
		for i, h := range hs[1:] {
			if h.Hash != hs[0].Hash {
				t.Fatalf("DIVERGENCE: same index, different state hashes: %s; %s and %s differ in tables %v",
					strings.Join(seen, "; "), cl.nodes[0].id, cl.nodes[i+1].id, differingTables(hs[0], h))
			}
		}
		return true, ""
	})
	t.Logf("state hashes agree: %s", seen[0])
}

// TestE2ELeaderSIGTERMHandover SIGTERMs the leader of a three-process
// cluster: it must hand leadership over (a new leader is named quickly, and
// its log says so), exit 0, and leave a cluster that still holds the
// earlier writes and accepts new ones.
func TestE2ELeaderSIGTERMHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cl := startE2ECluster(ctx, t)

	acked := map[string]e2eProps{}
	for i := range 5 {
		id := fmt.Sprintf("before-%d", i)
		var r e2eCreateReply
		req := e2eCreateReq{NodeID: id, Properties: map[string]any{"i": i}, IdempotencyKey: id}
		if _, err := cl.c.write(ctx, e2eRotate(cl.nodes, i), "/v1/nodes/create", req, &r); err != nil || !r.Created {
			t.Fatalf("create %s: created=%v, %v", id, r.Created, err)
		}
		acked[id] = e2eProps{"i": e2eJSON(i)}
	}

	old, term := cl.leader(ctx, nil)
	sent := time.Now()
	old.signal(t, syscall.SIGTERM)
	next, newTerm := cl.leader(ctx, old)
	handover := time.Since(sent)
	st := old.waitExit(e2eExitTimeout)
	exited := time.Since(sent)
	if st == nil {
		t.Fatalf("old leader %s did not exit within %v of SIGTERM", old.id, e2eExitTimeout)
	}
	t.Logf("SIGTERM to %s (term %d): %s leads in term %d after %v; %s exited %v after %v",
		old.id, term, next.id, newTerm, handover.Round(time.Millisecond), old.id, st, exited.Round(time.Millisecond))
	if !st.Success() {
		t.Errorf("old leader %s exited with %v after SIGTERM, want 0: %v", old.id, st, old.proc.err)
	}
	if log := old.currentLog(t); !strings.Contains(log, "handed over leadership before shutdown") {
		t.Errorf("old leader %s did not hand over leadership; its log:\n%s", old.id, log)
	}
	// A transfer needs no election timeout to pass; 5s leaves room for a
	// loaded machine while still catching a cluster left leaderless.
	if handover > 5*time.Second {
		t.Errorf("a new leader took %v after SIGTERM to the leader", handover)
	}

	survivors := cl.others(old)
	var r e2eCreateReply
	if _, err := cl.c.write(ctx, survivors, "/v1/nodes/create", e2eCreateReq{NodeID: "after", Properties: map[string]any{}, IdempotencyKey: "after"}, &r); err != nil || !r.Created {
		t.Fatalf("create after handover: created=%v, %v", r.Created, err)
	}
	for _, n := range survivors {
		for id, want := range acked {
			got, err := cl.c.get(ctx, n, id, false)
			if err != nil {
				t.Errorf("linearizable read of %s through %s after handover: %v", id, n.id, err)
			} else if d := want.check(got); d != "" {
				t.Errorf("linearizable read of %s through %s after handover: %s", id, n.id, d)
			}
		}
	}
}

// e2eRotate returns nodes starting at index i (mod len), so concurrent
// callers spread over different first nodes.
func e2eRotate(nodes []*e2eNode, i int) []*e2eNode {
	i %= len(nodes)
	return append(append([]*e2eNode{}, nodes[i:]...), nodes[:i]...)
}
