//go:build unix

package main

// A crash loop over three real `arbiter serve` processes with fsync on:
// while writers create nodes through every process, a seeded killer
// SIGKILLs a random node (the leader or a follower) and restarts it on its
// data directory, or SIGSTOPs one past the election timeout and SIGCONTs
// it, or SIGKILLs two nodes (no quorum: nothing may be acknowledged until
// they return) or all three at once. Snapshots are made frequent, and the trailing log short, so kills
// land around snapshots and restarted nodes catch up by snapshot installs.
// At the end every acknowledged write must be on every node and the three
// replicas must hash the same.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/chaos"
	"github.com/arbiterhq/arbiter/internal/seed"
)

const (
	crashWriters     = 4 // concurrent create writers
	crashCIKills     = 6 // SIGKILLs in the bounded (CI) run
	crashCIPauses    = 2 // SIGSTOP/SIGCONT pauses in the bounded run
	crashCIGroups    = 1 // kills of two nodes, and of all three, in the bounded run
	crashMinAckedOut = 8 // acknowledged writes required while a node is down or paused
	crashMinAckedIn  = 8 // ... and again once it is back
	// crashProgressBound bounds each wait for those writes, an election
	// and a restart included.
	crashProgressBound = 20 * time.Second
	// crashAttemptTimeout bounds one HTTP attempt of a write: a paused
	// process accepts connections but never answers, so the writer must
	// give up on it and try the next node.
	crashAttemptTimeout = 1500 * time.Millisecond
	// crashWriteBound bounds a write with all its retries; past it the
	// write's outcome is unknown.
	crashWriteBound = 6 * time.Second
	// Pauses must outlast raft's follower timeout (1-2s with the default
	// 1s heartbeat timeout) so a paused leader is replaced.
	crashPauseMin = 2500 * time.Millisecond
	crashPauseMax = 3500 * time.Millisecond
)

// crashServeArgs make snapshots frequent (a snapshot is due 64 entries
// after the last, checked every 0.5-1s) and keep only 16 entries behind
// one, so that a node down for a second or two is sent a snapshot. fsync
// stays on: the test is about the durability of acknowledged writes.
var crashServeArgs = []string{"--snapshot-threshold", "64", "--snapshot-interval", "500ms", "--trailing-logs", "16"}

// TestCrashLoop is the crash loop described at the top of this file.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	// ARBITER_SOAK unset: the bounded CI run (soak 0); a duration: keep
	// killing that long (see RELIABILITY.md).
	soak, _, err := chaos.SoakDuration()
	if err != nil {
		t.Fatal(err)
	}
	// The final checks read every acknowledged write six times, so their
	// time grows with the soak (about 45s after a 3m soak on 2 cores): a
	// soak needs go test -timeout above 2*ARBITER_SOAK+2m.
	bound := 80 * time.Second
	if soak > 0 {
		bound = 2*soak + 2*time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	began := time.Now()
	seed := seed.For(t)
	t.Logf("crash loop seed %d (soak %v)", seed, soak)

	cl := startE2ECluster(ctx, t, crashServeArgs...)
	cr := &crashRun{t: t, cl: cl, seed: seed, rng: rand.New(rand.NewPCG(seed, 0))}
	t.Cleanup(cr.resumePaused) // before stopAll: a stopped process ignores SIGTERM

	stopWriters := cr.startWriters(ctx)
	plan := newCrashPlan(cr.rng, soak)
	for f, ok := plan.next(); ok; f, ok = plan.next() {
		cr.sleepBetweenFaults()
		cr.inject(ctx, f)
	}
	stopWriters()
	faultsDone := time.Since(began)

	cr.settle(ctx)
	cr.verifyAcknowledged(ctx)
	cr.verifyUnknown(ctx)
	e2eCompareStateHashes(ctx, t, cl)
	cl.stopAll() // (c): every process must exit 0 on SIGTERM

	logs := cr.readLogs()
	if logs.taken == 0 {
		t.Errorf("no snapshot was taken: the crash loop did not exercise snapshots (flags %v)", crashServeArgs)
	}
	t.Logf("error lines in the node logs, by message: %v", logs.errors)
	t.Logf("crash loop summary: seed=%d kills=%d (leader %d, follower %d, %d mid-snapshot) pauses=%d (leader %d) "+
		"snapshots taken=%d installed=%d restored-at-start=%d leftover-tmp=%d acked=%d unknown=%d (%d applied) violations=%d faults=%v total=%v",
		seed, cr.kills, cr.leaderKills, cr.kills-cr.leaderKills, cr.midSnapshotKills, cr.pauses, cr.leaderPauses,
		logs.taken, logs.installed, logs.restored, cr.leftoverTempSnapshots(), len(cr.acked), len(cr.unknown), cr.unknownApplied,
		cr.violations.Load(), faultsDone.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// crashFault is one fault the killer injects.
type crashFault struct {
	pause  bool // SIGSTOP then SIGCONT, instead of SIGKILL then restart
	leader bool // aimed at the leader rather than at a follower
	// victims is how many nodes at once: 1, 2 (the leader, if leader,
	// and a follower; no quorum left) or 3 (every node).
	victims int
}

func (f crashFault) String() string {
	what, whom := "SIGKILL", "follower"
	if f.pause {
		what = "SIGSTOP"
	}
	if f.leader {
		whom = "leader"
	}
	switch f.victims {
	case 2:
		whom += " and a follower"
	case 3:
		whom = "every node"
	}
	return what + " " + whom
}

// crashPlan yields the faults. The bounded run shuffles a fixed mix, so
// that leader and follower kills and a leader and a follower pause happen
// in every run; a soak draws faults at random until its time is up.
type crashPlan struct {
	rng   *rand.Rand
	fixed []crashFault
	until time.Time // zero in the bounded run
}

func newCrashPlan(rng *rand.Rand, soak time.Duration) *crashPlan {
	p := &crashPlan{rng: rng}
	if soak > 0 {
		p.until = time.Now().Add(soak)
		return p
	}
	for i := range crashCIKills {
		p.fixed = append(p.fixed, crashFault{leader: i%2 == 0, victims: 1})
	}
	for i := range crashCIPauses {
		p.fixed = append(p.fixed, crashFault{pause: true, leader: i%2 == 0, victims: 1})
	}
	for i := range crashCIGroups {
		p.fixed = append(p.fixed, crashFault{leader: i%2 == 0, victims: 2}, crashFault{victims: 3})
	}
	rng.Shuffle(len(p.fixed), func(i, j int) { p.fixed[i], p.fixed[j] = p.fixed[j], p.fixed[i] })
	return p
}

func (p *crashPlan) next() (crashFault, bool) {
	if p.until.IsZero() {
		if len(p.fixed) == 0 {
			return crashFault{}, false
		}
		f := p.fixed[0]
		p.fixed = p.fixed[1:]
		return f, true
	}
	if time.Now().After(p.until) {
		return crashFault{}, false
	}
	switch r := p.rng.IntN(12); {
	case r == 0:
		return crashFault{victims: 3}, true
	case r == 1:
		return crashFault{leader: p.rng.IntN(2) == 0, victims: 2}, true
	default:
		return crashFault{pause: p.rng.IntN(4) == 0, leader: p.rng.IntN(2) == 0, victims: 1}, true
	}
}

// crashRun is the state of one crash loop. Only the test goroutine injects
// faults and touches processes; writers only use the nodes' fixed
// addresses, and record outcomes under mu.
type crashRun struct {
	t    *testing.T
	cl   *e2eCluster
	seed uint64
	rng  *rand.Rand // the killer's; writers have their own

	paused *e2eNode // the node stopped by SIGSTOP, if any

	kills, leaderKills, midSnapshotKills int
	pauses, leaderPauses                 int

	mu             sync.Mutex
	acked          map[string]e2eProps // acknowledged: must exist with these properties
	unknown        map[string]e2eProps // not acknowledged: may exist, but only with these properties
	ackedCount     atomic.Int64        // len(acked), for progress waits
	unknownApplied int                 // unknown writes found applied at the end
	violations     atomic.Int64        // lost or wrong acknowledged writes, wrong unknown ones
}

// startWriters runs crashWriters goroutines creating unique ids until the
// returned function is called; it stops them and waits for them. A write in
// flight then runs to its end (within crashWriteBound), so that unknown
// outcomes count only those the faults caused.
func (cr *crashRun) startWriters(ctx context.Context) (stop func()) {
	cr.acked, cr.unknown = map[string]e2eProps{}, map[string]e2eProps{}
	halt := make(chan struct{})
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Go(func() { cr.writer(ctx, w, halt) })
	}
	return func() { close(halt); wg.Wait() }
}

// writer creates crash-w<w>-<seq> with a random nonce, starting each write
// at a different node so that followers forward to the leader.
func (cr *crashRun) writer(ctx context.Context, w int, halt <-chan struct{}) {
	rng := rand.New(rand.NewPCG(cr.seed, uint64(w)+1))
	for seq := 0; ctx.Err() == nil; seq++ {
		select {
		case <-halt:
			return
		default:
		}
		id := fmt.Sprintf("crash-w%d-%06d", w, seq)
		props := map[string]any{"writer": fmt.Sprintf("w%d", w), "seq": seq, "nonce": fmt.Sprintf("%016x", rng.Uint64())}
		want := e2eProps{}
		for k, v := range props {
			want[k] = e2eJSON(v)
		}
		req := e2eCreateReq{NodeID: id, Labels: []string{"crash"}, Properties: props, IdempotencyKey: id}
		res, attempts, err := crashCreate(ctx, cr.cl.c, e2eRotate(cr.cl.nodes, w+seq), req)
		cr.record(id, want, res, attempts, err)
	}
}

// record files one write's outcome. Only a 200 reply with created=true is
// an acknowledgement. A retry of a keyed create replays the first result,
// so created=false for a unique id means someone else's node took it.
func (cr *crashRun) record(id string, want e2eProps, res *e2eCreateReply, attempts int, err error) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	switch {
	case err != nil && !e2eRetryable(err):
		cr.t.Errorf("create %s: non-retryable error after %d attempts: %v", id, attempts, err)
		cr.unknown[id] = want
	case err != nil:
		cr.unknown[id] = want
	case !res.Created:
		cr.violations.Add(1)
		cr.t.Errorf("create %s: created=false (replayed=%v) after %d attempts; node %+v", id, res.Replayed, attempts, res.Node)
		cr.unknown[id] = want
	default:
		if d := want.check(&res.Node); d != "" {
			cr.violations.Add(1)
			cr.t.Errorf("create %s acknowledged with %s", id, d)
		}
		cr.acked[id] = want
		cr.ackedCount.Add(1)
	}
}

// crashCreate posts one create, moving to the next node after each
// retryable failure. Every attempt is bounded by crashAttemptTimeout and
// all of them by crashWriteBound; the idempotency key makes retrying an
// unknown outcome safe.
func crashCreate(ctx context.Context, c *e2eAPIClient, nodes []*e2eNode, req e2eCreateReq) (*e2eCreateReply, int, error) {
	ctx, cancel := context.WithTimeout(ctx, crashWriteBound)
	defer cancel()
	for attempt := 0; ; attempt++ {
		var res e2eCreateReply
		actx, acancel := context.WithTimeout(ctx, crashAttemptTimeout)
		err := c.call(actx, http.MethodPost, nodes[attempt%len(nodes)].url()+"/v1/nodes/create", req, &res)
		acancel()
		if err == nil {
			return &res, attempt + 1, nil
		}
		if !e2eRetryable(err) {
			return nil, attempt + 1, err
		}
		backoff := time.NewTimer(min(25*time.Millisecond<<min(attempt, 4), 400*time.Millisecond))
		select {
		case <-backoff.C:
		case <-ctx.Done():
			backoff.Stop()
			return nil, attempt + 1, fmt.Errorf("not acknowledged in time: %w", err)
		}
	}
}

// sleepBetweenFaults waits a random 200ms..1.5s, writes going on.
func (cr *crashRun) sleepBetweenFaults() {
	time.Sleep(200*time.Millisecond + time.Duration(cr.rng.Int64N(int64(1300*time.Millisecond))))
}

// inject aims f at the leader or at a random follower. When it returns,
// the node is back, has caught up, and the cluster has acknowledged writes
// both while it was out and after it returned.
func (cr *crashRun) inject(ctx context.Context, f crashFault) {
	t := cr.t
	for _, n := range cr.cl.nodes {
		if !n.running() { // the last fault restored its node: this one died by itself
			t.Fatalf("%s exited without being killed (seed %d): %v", n.id, cr.seed, n.proc.err)
		}
	}
	if f.victims > 1 {
		cr.killGroup(ctx, f)
		return
	}
	leader, term := cr.cl.leader(ctx, nil)
	victim := leader
	if !f.leader {
		followers := cr.cl.others(leader)
		victim = followers[cr.rng.IntN(len(followers))]
	}
	start := time.Now()
	ackedBefore := cr.ackedCount.Load()
	var out time.Duration
	if f.pause {
		out = cr.pause(ctx, victim)
		cr.pauses++
		if f.leader {
			cr.leaderPauses++
		}
	} else {
		out = cr.kill(ctx, victim)
		cr.kills++
		if f.leader {
			cr.leaderKills++
		}
	}
	cr.waitCaughtUp(ctx, victim)
	cr.waitProgress(ctx, crashMinAckedIn, fmt.Sprintf("after %s (%v) returned", victim.id, f))
	t.Logf("%v %s (leader %s, term %d): out %v, whole fault %v, %d writes acknowledged meanwhile (%d in all)",
		f, victim.id, leader.id, term, out.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		cr.ackedCount.Load()-ackedBefore, cr.ackedCount.Load())
}

// kill SIGKILLs n, waits until the survivors have acknowledged writes, then
// after a further random short delay restarts n on its data directory. It
// returns how long n was down.
func (cr *crashRun) kill(ctx context.Context, n *e2eNode) time.Duration {
	t := cr.t
	n.signal(t, syscall.SIGKILL)
	killed := time.Now()
	if n.waitExit(5*time.Second) == nil {
		t.Fatalf("%s still running 5s after SIGKILL", n.id)
	}
	if crashKilledMidSnapshot(n.currentLog(t)) {
		cr.midSnapshotKills++
	}
	cr.waitProgress(ctx, crashMinAckedOut, fmt.Sprintf("while %s is down", n.id))
	time.Sleep(time.Duration(cr.rng.Int64N(int64(700 * time.Millisecond))))
	down := time.Since(killed)
	n.start(t, cr.cl.bin)
	cr.cl.waitReady(ctx, n, crashProgressBound)
	cr.checkResumed(ctx, n)
	return down
}

// killGroup SIGKILLs two nodes (the cluster keeps no quorum: every write
// must fail, retryably, and none may be acknowledged until they return)
// or all three at once, then restarts them on their data directories and
// waits for acknowledged writes again. Whatever was acknowledged before
// must survive: verifyAcknowledged reads it all at the end.
func (cr *crashRun) killGroup(ctx context.Context, f crashFault) {
	t := cr.t
	leader, term := cr.cl.leader(ctx, nil)
	victims := cr.cl.nodes
	if f.victims == 2 {
		followers := slices.Clone(cr.cl.others(leader))
		cr.rng.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
		victims = followers[:2]
		if f.leader {
			victims[1] = leader
		}
	}
	start := time.Now()
	for _, n := range victims {
		n.signal(t, syscall.SIGKILL)
	}
	for _, n := range victims {
		if n.waitExit(5*time.Second) == nil {
			t.Fatalf("%s still running 5s after SIGKILL", n.id)
		}
	}
	cr.kills += len(victims)
	if f.victims == 2 {
		// Writes that committed before the kill may still be answered
		// for a moment; after that, without a quorum, none can be.
		time.Sleep(time.Second)
		acked := cr.ackedCount.Load()
		time.Sleep(2 * time.Second)
		if got := cr.ackedCount.Load(); got != acked {
			cr.violations.Add(1)
			t.Errorf("%d writes acknowledged with two of three nodes down (seed %d)", got-acked, cr.seed)
		}
	}
	for _, n := range victims {
		n.start(t, cr.cl.bin)
	}
	for _, n := range victims {
		cr.cl.waitReady(ctx, n, crashProgressBound)
		cr.checkResumed(ctx, n)
	}
	for _, n := range victims {
		cr.waitCaughtUp(ctx, n)
	}
	ackedBefore := cr.ackedCount.Load()
	cr.waitProgress(ctx, crashMinAckedIn, fmt.Sprintf("after %v returned", f))
	t.Logf("%v (leader %s, term %d): whole fault %v, %d writes acknowledged after (%d in all)",
		f, leader.id, term, time.Since(start).Round(time.Millisecond), cr.ackedCount.Load()-ackedBefore, cr.ackedCount.Load())
}

// checkResumed checks that restarted n resumed from its data directory.
func (cr *crashRun) checkResumed(ctx context.Context, n *e2eNode) {
	cr.t.Helper()
	cr.cl.checkResumed(ctx, cr.t, n)
}

// crashKilledMidSnapshot reports whether a killed process's log shows a
// snapshot started and not completed.
func crashKilledMidSnapshot(log string) bool {
	return strings.LastIndex(log, "starting snapshot up to") > strings.LastIndex(log, "snapshot complete up to")
}

// pause SIGSTOPs n for crashPauseMin..crashPauseMax, at least until the
// others have acknowledged writes, then SIGCONTs it. It returns how long n
// was stopped.
func (cr *crashRun) pause(ctx context.Context, n *e2eNode) time.Duration {
	t := cr.t
	n.signal(t, syscall.SIGSTOP)
	cr.paused = n
	stopped := time.Now()
	until := stopped.Add(crashPauseMin + time.Duration(cr.rng.Int64N(int64(crashPauseMax-crashPauseMin))))
	cr.waitProgress(ctx, crashMinAckedOut, fmt.Sprintf("while %s is paused", n.id))
	time.Sleep(time.Until(until))
	n.signal(t, syscall.SIGCONT)
	cr.paused = nil
	out := time.Since(stopped)
	cr.cl.waitReady(ctx, n, crashProgressBound)
	return out
}

// resumePaused SIGCONTs a node left stopped by a failed test.
func (cr *crashRun) resumePaused() {
	if cr.paused != nil && cr.paused.running() {
		_ = cr.paused.proc.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// waitProgress waits until k more writes are acknowledged than when it was
// called: the cluster, with one node out or just back, still commits.
func (cr *crashRun) waitProgress(ctx context.Context, k int64, when string) {
	cr.t.Helper()
	base := cr.ackedCount.Load()
	cr.cl.eventually(ctx, crashProgressBound, fmt.Sprintf("%d acknowledged writes %s (seed %d)", k, when, cr.seed), func() (bool, string) {
		got := cr.ackedCount.Load() - base
		return got >= k, fmt.Sprintf("%d acknowledged", got)
	})
}

// waitCaughtUp waits until n has applied the leader's commit index, so the
// next fault never takes out the only other up-to-date node.
func (cr *crashRun) waitCaughtUp(ctx context.Context, n *e2eNode) {
	cr.t.Helper()
	target := cr.leaderCommit(ctx)
	cr.cl.eventually(ctx, crashProgressBound, fmt.Sprintf("%s applied the leader's commit index %d", n.id, target), func() (bool, string) {
		st, err := cr.cl.c.status(ctx, n)
		if err != nil {
			return false, err.Error()
		}
		return st.AppliedIndex >= target, fmt.Sprintf("applied %d", st.AppliedIndex)
	})
}

func (cr *crashRun) leaderCommit(ctx context.Context) uint64 {
	cr.t.Helper()
	leader, _ := cr.cl.leader(ctx, nil)
	st, err := cr.cl.c.status(ctx, leader)
	if err != nil {
		cr.t.Fatalf("status of leader %s: %v", leader.id, err)
	}
	return st.CommitIndex
}

// settle, once the writers have stopped, waits until all three nodes are
// ready and have applied the leader's commit index, which covers every
// acknowledged write: from then on stale reads must see them all.
func (cr *crashRun) settle(ctx context.Context) {
	for _, n := range cr.cl.nodes {
		restarted := !n.running()
		if restarted { // every fault restores its node: this one died by itself
			cr.t.Errorf("%s exited without being killed (seed %d): %v", n.id, cr.seed, n.proc.err)
			n.start(cr.t, cr.cl.bin)
		}
		cr.cl.waitReady(ctx, n, crashProgressBound)
		if restarted {
			cr.checkResumed(ctx, n)
		}
	}
	for _, n := range cr.cl.nodes {
		cr.waitCaughtUp(ctx, n)
	}
}

// verifyAcknowledged reads every acknowledged write on every node, stale
// (the node's own state) and linearizable. Only transport errors and 503s
// are retried; a missing node or other properties is a lost write.
func (cr *crashRun) verifyAcknowledged(ctx context.Context) {
	ids := crashSortedIDs(cr.acked)
	var wg sync.WaitGroup
	for _, n := range cr.cl.nodes {
		for _, stale := range []bool{true, false} {
			wg.Go(func() {
				kind := "linearizable"
				if stale {
					kind = "stale"
				}
				lost := crashForEach(ids, 3, func(_ int, id string) bool {
					got, err := cr.read(ctx, n, id, stale)
					why := ""
					if err != nil {
						why = err.Error()
					} else {
						why = cr.acked[id].check(got)
					}
					if why != "" {
						cr.violations.Add(1)
						cr.t.Errorf("LOST: %s read of acknowledged %s on %s (seed %d): %s", kind, id, n.id, cr.seed, why)
						return false
					}
					return true
				})
				cr.t.Logf("%s: %d acknowledged writes read %s, %d lost", n.id, len(ids), kind, lost)
			})
		}
	}
	wg.Wait()
}

// verifyUnknown reads every unacknowledged write once, linearizably: it may
// be absent, but if present it must hold what was written.
func (cr *crashRun) verifyUnknown(ctx context.Context) {
	ids := crashSortedIDs(cr.unknown)
	var applied atomic.Int64
	crashForEach(ids, 4, func(i int, id string) bool {
		n := cr.cl.nodes[i%len(cr.cl.nodes)]
		got, err := cr.read(ctx, n, id, false)
		if ae := (*e2eAPIError)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return true
		}
		why := ""
		if err != nil {
			why = err.Error()
		} else if why = cr.unknown[id].check(got); why == "" {
			applied.Add(1)
		}
		if why != "" {
			cr.violations.Add(1)
			cr.t.Errorf("unacknowledged write %s read through %s (seed %d): %s", id, n.id, cr.seed, why)
			return false
		}
		return true
	})
	cr.unknownApplied = int(applied.Load())
}

// read gets id from n, retrying transport errors and 503s for a while.
func (cr *crashRun) read(ctx context.Context, n *e2eNode, id string, stale bool) (*e2eNodeReply, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := cr.cl.c.get(ctx, n, id, stale)
		if err == nil || !e2eRetryable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return got, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crashForEach runs f over ids (with their index) on workers goroutines
// and returns how many calls returned false.
func crashForEach(ids []string, workers int, f func(i int, id string) bool) int {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(ids)); i = next.Add(1) - 1 {
				if !f(int(i), ids[i]) {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(failed.Load())
}

func crashSortedIDs(m map[string]e2eProps) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// crashLogStats is read from every process log of the run: the snapshots
// raft took, those a follower installed from its leader, the restores from
// a local snapshot at start, and the error lines by message (kills make
// many expected ones, such as failed heartbeats; they are logged for
// whoever looks for something unexpected, not judged).
type crashLogStats struct {
	taken, installed, restored int
	errors                     map[string]int
}

func (cr *crashRun) readLogs() crashLogStats {
	s := crashLogStats{errors: map[string]int{}}
	for _, n := range cr.cl.nodes {
		for _, path := range n.logs {
			b, err := os.ReadFile(path)
			if err != nil {
				cr.t.Errorf("reading %s: %v", path, err)
				continue
			}
			log := string(b)
			s.taken += strings.Count(log, "snapshot complete up to")
			s.installed += strings.Count(log, "Installed remote snapshot")
			s.restored += strings.Count(log, "restored from snapshot")
			for line := range strings.Lines(log) {
				if strings.Contains(line, "level=ERROR") || strings.Contains(line, "[ERROR]") {
					s.errors[crashLogMsg(line)]++
				}
			}
		}
	}
	return s
}

// crashLogMsg is the msg="..." of a slog text line, or the whole line.
func crashLogMsg(line string) string {
	_, rest, ok := strings.Cut(line, `msg="`)
	if !ok {
		return strings.TrimSpace(line)
	}
	msg, _, _ := strings.Cut(rest, `"`)
	return msg
}

// leftoverTempSnapshots counts the snapshot directories a killed process
// left half written (raft's file snapshot store names them *.tmp, skips
// them on start and never removes them).
func (cr *crashRun) leftoverTempSnapshots() int {
	count := 0
	for _, n := range cr.cl.nodes {
		tmp, err := filepath.Glob(filepath.Join(n.dataDir, "snapshots", "*.tmp"))
		if err != nil {
			cr.t.Errorf("%s: %v", n.dataDir, err)
		}
		count += len(tmp)
	}
	return count
}
