//go:build unix

package main

// A crash loop over three real `arbiter serve` processes with fsync on:
// while writers overwrite nodes through every process, a seeded killer
// SIGKILLs a random node (the leader or a follower) and restarts it on its
// data directory, or SIGSTOPs one past the election timeout and SIGCONTs
// it, or SIGKILLs two nodes (no quorum: nothing may be acknowledged until
// they return) or all three at once. Snapshots are made frequent, and the
// trailing log short, so kills land around snapshots and restarted nodes
// catch up by snapshot installs.
//
// Each writer owns a fixed set of nodes and overwrites them with
// compare-and-set, so the state stays the same size however long a soak
// runs (a soak that created a node per write grew to 100,000 of them, and
// a restarted follower restoring its 58 MB snapshots never caught up; see
// RELIABILITY.md). Overwrites still prove every acknowledged write
// durable: each write to a node carries a sequence number above any sent
// to it before, and a CAS is conditioned on the whole value the writer
// last saw stored, so the stored sequence only ever rises and each
// sequence is stored at most once. An acknowledged CAS thus proves that
// the value it was conditioned on was there when it applied; whatever the
// writer sees of a node (a rejected write's reply, a read) must hold the
// last acknowledged sequence or a later one whose outcome was unknown;
// and at the end every node must hold such a value on every replica. The
// three replicas must also hash the same, at the end and every
// crashHashEvery faults (the writers pause for that check).

import (
	"context"
	"encoding/json"
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
	crashWriters       = 4   // concurrent writers
	crashKeysPerWriter = 128 // nodes each writer owns and overwrites in turn
	crashCIKills       = 6   // SIGKILLs of one node in the bounded (CI) run
	crashCIPauses      = 2   // SIGSTOP/SIGCONT pauses in the bounded run
	crashCIGroups      = 1   // kills of two nodes, and of all three, in the bounded run
	// crashHashEvery: every that many faults the writers stop, the nodes
	// settle and their state hashes are compared at one index (and once
	// more at the end), so a divergence is caught close to the faults
	// that caused it, not only by the final check.
	crashHashEvery   = 5
	crashMinAckedOut = 8 // acknowledged writes required while a node is down or paused
	crashMinAckedIn  = 8 // ... and again once it is back
	// crashProgressBound bounds each wait for those writes, an election
	// and a restart included.
	crashProgressBound = 20 * time.Second
	// crashAttemptTimeout bounds one HTTP attempt of a write or a read: a
	// paused process accepts connections but never answers, so the writer
	// must give up on it and try the next node.
	crashAttemptTimeout = 1500 * time.Millisecond
	// crashWriteBound bounds a write with all its retries; past it the
	// write's outcome is unknown.
	crashWriteBound = 6 * time.Second
	// Pauses must outlast raft's follower timeout (1-2s with the default
	// 1s heartbeat timeout) so a paused leader is replaced.
	crashPauseMin = 2500 * time.Millisecond
	crashPauseMax = 3500 * time.Millisecond
	// The killer waits crashGapMin..crashGapMax between faults, writes
	// going on. The faults themselves take random times (an election, a
	// random time down), so a short gap is enough to land kills at every
	// point of the snapshot cycle (0.5-1s, see crashServeArgs).
	crashGapMin = 100 * time.Millisecond
	crashGapMax = 600 * time.Millisecond
)

// crashServeArgs make snapshots frequent (a snapshot is due 64 entries
// after the last, checked every 0.5-1s) and keep only 16 entries behind
// one, so that a node down for a second or two is sent a snapshot. fsync
// stays on: the test is about the durability of acknowledged writes.
//
// The other flags bound what every keyed write adds besides its node: the
// idempotency ledger keeps the last 4,096 results (at the loop's few
// hundred writes a second, ten seconds or more: well past
// crashWriteBound, so a writer's own retries are replayed; a straggler
// that comes later runs again and fails its condition) and the change
// feed its last 1,024 events. With crashWriters*crashKeysPerWriter nodes,
// a snapshot then stays about 1.5 MB (mostly ledger rows) however long
// the loop runs, and a restarted node restores it far faster than the
// leader writes 16 entries; what the growers add on top
// (crashloop_grow_test.go: a few MB in CI, as much as a soak asks for)
// is what makes the state, and its restore time, grow.
var crashServeArgs = []string{"--snapshot-threshold", "64", "--snapshot-interval", "500ms", "--trailing-logs", "16",
	"--idempotency-max-rows", "4096", "--change-feed-retain", "1024"}

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
	// The final checks read a fixed number of nodes, so they take the same
	// time after any soak: a soak needs go test -timeout above
	// ARBITER_SOAK+5m.
	bound := 80 * time.Second
	if soak > 0 {
		bound = soak + 5*time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	began := time.Now()
	seed := seed.For(t)
	t.Logf("crash loop seed %d (soak %v)", seed, soak)

	cl := startE2ECluster(ctx, t, crashServeArgs...)
	cr := &crashRun{t: t, cl: cl, seed: seed, rng: rand.New(rand.NewPCG(seed, 0)), growth: newCrashGrowth(t)}
	t.Cleanup(cr.resumePaused) // before stopAll: a stopped process ignores SIGTERM

	cr.makeKeys()
	stopWriters := cr.startWriters(ctx)
	plan := newCrashPlan(cr.rng, soak)
	faultsBegan := time.Now()
	events, hashChecks := 0, 0
	for f, ok := plan.next(); ok; f, ok = plan.next() {
		if events > 0 && events%crashHashEvery == 0 { // (after the last fault, the final check does it)
			stopWriters()
			cr.settle(ctx)
			e2eCompareStateHashes(ctx, t, cl)
			hashChecks++
			stopWriters = cr.startWriters(ctx)
		}
		cr.sleepBetweenFaults()
		cr.inject(ctx, f)
		events++
	}
	stopWriters()
	faultsTook := time.Since(faultsBegan)

	cr.settle(ctx)
	cr.verifyKeys(ctx)
	cr.verifyGrowth(ctx)
	e2eCompareStateHashes(ctx, t, cl)
	hashChecks++
	cl.stopAll() // (c): every process must exit 0 on SIGTERM

	logs := cr.readLogs()
	if logs.taken == 0 {
		t.Errorf("no snapshot was taken: the crash loop did not exercise snapshots (flags %v)", crashServeArgs)
	}
	t.Logf("error lines in the node logs, by message: %v", logs.errors)
	for _, bug := range crashBugMessages {
		if n := logs.errors[bug]; n > 0 {
			t.Errorf("%d node log lines say %q (seed %d)", n, bug, seed)
		}
	}
	k := &cr.kills
	t.Logf("crash loop summary: seed=%d SIGKILL-restart cycles=%d (one node %d [leader %d, follower %d], two nodes %d, whole cluster %d) "+
		"processes killed=%d (%d mid-snapshot) pauses=%d (leader %d) fault events=%d (%.1f/min) "+
		"snapshots taken=%d installed=%d restored-at-start=%d leftover-tmp=%d largest-kept=%dKB "+
		"acked=%d unknown=%d (%d seen applied) rejected=%d keys=%d violations=%d state-hash checks=%d faults=%v total=%v",
		seed, k.one+k.two+k.all, k.one, k.oneLeader, k.one-k.oneLeader, k.two, k.all,
		k.processes, k.midSnapshot, cr.pauses, cr.leaderPauses, events, float64(events)/faultsTook.Minutes(),
		logs.taken, logs.installed, logs.restored, cr.leftoverTempSnapshots(), cr.largestSnapshot()>>10,
		cr.acked.Load(), cr.unknown.Load(), cr.unknownSeen.Load(), cr.rejected.Load(), len(cr.allKeys()),
		cr.violations.Load(), hashChecks, faultsTook.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
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
// addresses, each its own keys, and shared counters.
type crashRun struct {
	t    *testing.T
	cl   *e2eCluster
	seed uint64
	rng  *rand.Rand // the killer's; writers have their own

	paused *e2eNode // the node stopped by SIGSTOP, if any

	kills                crashKills
	pauses, leaderPauses int

	// keys[w] are writer w's nodes: only writer w touches them until the
	// writers stop, then only the test goroutine.
	keys [][]*crashKey
	// writerRounds counts startWriters calls (writers stop for every
	// state-hash check); each round's writers draw from their own seeds.
	writerRounds int
	// growth is what the growers created (crashloop_grow_test.go).
	growth *crashGrowth

	acked       atomic.Int64 // writes acknowledged (created=true or swapped=true)
	unknown     atomic.Int64 // writes of unknown outcome
	unknownSeen atomic.Int64 // ... of which a later read or reply showed the value stored
	rejected    atomic.Int64 // writes decided not applied (created=false, swapped=false, 404)
	decided     atomic.Int64 // writes and linearizable reads answered (not 503, not timed out)
	violations  atomic.Int64 // lost or wrong acknowledged writes, values nobody could have stored
}

// crashKills counts SIGKILL-and-restart cycles by kind, and the processes
// they killed.
type crashKills struct {
	one, oneLeader int // of one node; of it, the leader
	two, all       int // of two nodes at once, of all three
	processes      int
	midSnapshot    int // processes killed while taking a snapshot
}

// crashKey is one node a writer owns and what the writer knows of it.
// Every write to it carries seq next (and a fresh nonce), so no sequence
// is ever sent twice; a CAS is conditioned on cur, the whole value last
// seen stored, so a write applies only on top of a value the writer has
// seen and the stored sequence only rises. maybe holds what the node may
// hold now: the last acknowledged write and the unknown ones after it.
// An older write can never be stored again, since the sequence only
// rises, and a rejected one never was.
type crashKey struct {
	id    string
	next  int                 // seq of the next write
	cur   e2eProps            // the value last seen stored; nil: absent
	stale bool                // a write's outcome is unknown: read cur back before the next write
	acked int                 // seq of the last acknowledged write; -1: none yet
	maybe map[int]*crashWrite // by seq
}

// crashWrite is a write that may be what its node holds.
type crashWrite struct {
	props e2eProps
	acked bool
	seen  bool // not acknowledged, but seen stored
}

func (cr *crashRun) allKeys() []*crashKey { return slices.Concat(cr.keys...) }

// makeKeys names the keys each writer owns.
func (cr *crashRun) makeKeys() {
	cr.keys = make([][]*crashKey, crashWriters)
	for w := range cr.keys {
		for i := range crashKeysPerWriter {
			cr.keys[w] = append(cr.keys[w], &crashKey{id: fmt.Sprintf("crash-w%d-k%03d", w, i), acked: -1, maybe: map[int]*crashWrite{}})
		}
	}
}

// startWriters runs crashWriters goroutines overwriting their keys, and
// crashGrowers creating new nodes (crashloop_grow_test.go), until the
// returned function is called; it stops them and waits for them. A
// write in flight then runs to its end (within crashWriteBound), so that
// unknown outcomes count only those the faults caused. Writers started
// again carry on from what their keys hold.
func (cr *crashRun) startWriters(ctx context.Context) (stop func()) {
	cr.writerRounds++
	round := cr.writerRounds
	halt := make(chan struct{})
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Go(func() { cr.writer(ctx, w, round, halt) })
	}
	for g := range crashGrowers {
		wg.Go(func() { cr.grow(ctx, g, halt) })
	}
	return func() { close(halt); wg.Wait() }
}

// writer writes its keys in turn, starting each write at a different node
// so that followers forward to the leader. After an unknown outcome it
// reads the key back, linearizably, before writing it again.
func (cr *crashRun) writer(ctx context.Context, w, round int, halt <-chan struct{}) {
	rng := rand.New(rand.NewPCG(cr.seed, uint64(round)<<32|uint64(w)+1))
	keys := cr.keys[w]
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-halt:
			return
		default:
		}
		k := keys[i%len(keys)]
		nodes := e2eRotate(cr.cl.nodes, w+i)
		if k.stale && !cr.resync(ctx, k, nodes) {
			continue // no answer in time: read it again on its next turn
		}
		cr.write(ctx, k, w, nodes, rng)
	}
}

// write sends k's next value: a create while k is absent, else a CAS
// conditioned on every field of cur. The idempotency key names the key
// and the seq, so a retry replays this write's own result.
func (cr *crashRun) write(ctx context.Context, k *crashKey, w int, nodes []*e2eNode, rng *rand.Rand) {
	seq := k.next
	k.next++
	writer, nonce := fmt.Sprintf("w%d", w), fmt.Sprintf("%016x", rng.Uint64())
	want := e2eProps{"writer": e2eJSON(writer), "seq": e2eJSON(seq), "nonce": e2eJSON(nonce)}
	idem := fmt.Sprintf("%s-s%06d", k.id, seq)
	var (
		node    *e2eNodeReply
		applied bool
		err     error
		op      string
	)
	if k.cur == nil {
		op = "create"
		var res e2eCreateReply
		req := e2eCreateReq{NodeID: k.id, Labels: []string{"crash"}, IdempotencyKey: idem,
			Properties: map[string]any{"writer": writer, "seq": seq, "nonce": nonce}}
		err = crashPost(ctx, cr.cl.c, nodes, "/v1/nodes/create", req, &res)
		node, applied = &res.Node, res.Created
	} else {
		op = "cas"
		conds := map[string]any{}
		for f, v := range k.cur {
			conds[f] = json.RawMessage(v)
		}
		var res e2eCASReply
		req := e2eCASReq{NodeID: k.id, Conditions: conds, IdempotencyKey: idem,
			Updates: map[string]any{"seq": seq, "nonce": nonce}}
		err = crashPost(ctx, cr.cl.c, nodes, "/v1/nodes/cas", req, &res)
		node, applied = &res.Node, res.Swapped
	}
	what := fmt.Sprintf("%s %s seq %d", op, k.id, seq)
	if err == nil {
		cr.decided.Add(1)
	}
	var ae *e2eAPIError
	switch {
	case err == nil && applied:
		if d := want.check(node); d != "" {
			cr.violation("%s acknowledged with %s", what, d)
		}
		k.ack(seq, want)
		cr.acked.Add(1)
	case err == nil:
		// Decided not applied; the reply is the node as it stood then.
		// If it holds this very write, an earlier attempt applied it and
		// its ledger row was evicted before this one came: not an
		// acknowledgement, but an unknown outcome seen stored.
		if s, ok := crashSeq(node); ok && s == seq {
			k.unsure(seq, want)
			cr.unknown.Add(1)
		} else {
			cr.rejected.Add(1)
		}
		cr.observe(k, node, "reply to "+what)
	case op == "cas" && errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		cr.rejected.Add(1)
		cr.observe(k, nil, "reply to "+what)
	default:
		if !e2eRetryable(err) {
			cr.t.Errorf("%s: non-retryable error: %v", what, err)
		}
		k.unsure(seq, want)
		k.stale = true
		cr.unknown.Add(1)
	}
}

// ack records that write seq of props was acknowledged: it is stored
// now, and since stored seqs only rise no older write can be again.
func (k *crashKey) ack(seq int, props e2eProps) {
	for s := range k.maybe {
		if s < seq {
			delete(k.maybe, s)
		}
	}
	k.maybe[seq] = &crashWrite{props: props, acked: true}
	k.acked, k.cur = seq, props
}

// unsure records that write seq of props may have been applied.
func (k *crashKey) unsure(seq int, props e2eProps) {
	k.maybe[seq] = &crashWrite{props: props}
}

// resync reads k linearizably, retrying on the next node for up to
// crashWriteBound, and takes what it finds as cur. It reports whether it
// got an answer.
func (cr *crashRun) resync(ctx context.Context, k *crashKey, nodes []*e2eNode) bool {
	ctx, cancel := context.WithTimeout(ctx, crashWriteBound)
	defer cancel()
	for attempt := 0; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, crashAttemptTimeout)
		got, err := cr.cl.c.get(actx, nodes[attempt%len(nodes)], k.id, false)
		acancel()
		var ae *e2eAPIError
		switch {
		case err == nil:
			cr.decided.Add(1)
			cr.observe(k, got, "read-back of "+k.id)
			return true
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			cr.decided.Add(1)
			cr.observe(k, nil, "read-back of "+k.id)
			return true
		case !e2eRetryable(err):
			cr.t.Errorf("read-back of %s: non-retryable error: %v", k.id, err)
			return false
		}
		if !crashBackoff(ctx, attempt) {
			return false
		}
	}
}

// observe takes got (nil: absent), a committed state of k seen in a reply
// or a read, as cur, after judging it; it reports whether k may hold got.
func (cr *crashRun) observe(k *crashKey, got *e2eNodeReply, what string) bool {
	seq, why := k.judge(got)
	if why != "" {
		cr.violation("%s: %s", what, why)
	}
	k.stale = false
	if got == nil {
		k.cur = nil
		return why == ""
	}
	k.cur = e2eProps{}
	for f, v := range got.Properties {
		k.cur[f] = string(v)
	}
	if wr := k.maybe[seq]; wr != nil && !wr.acked && !wr.seen && why == "" {
		wr.seen = true
		cr.unknownSeen.Add(1)
	}
	return why == ""
}

// judge reports, as a LOST or wrong write, got (nil: absent) unless k may
// hold it: the last acknowledged write or a later one of unknown outcome,
// each with exactly its properties. It returns got's seq.
func (k *crashKey) judge(got *e2eNodeReply) (int, string) {
	if got == nil {
		if k.acked >= 0 {
			return -1, fmt.Sprintf("LOST: absent, but seq %d was acknowledged", k.acked)
		}
		return -1, ""
	}
	seq, ok := crashSeq(got)
	if !ok {
		return -1, fmt.Sprintf("no integer seq in %s", e2eRaw(got.Properties))
	}
	if seq < k.acked {
		return seq, fmt.Sprintf("LOST: seq %d stored, but seq %d was acknowledged", seq, k.acked)
	}
	wr := k.maybe[seq]
	if wr == nil {
		return seq, fmt.Sprintf("seq %d stored, but no write that may be stored carried it (last acknowledged %d): %s", seq, k.acked, e2eRaw(got.Properties))
	}
	if d := wr.props.check(got); d != "" {
		return seq, fmt.Sprintf("seq %d stored with %s", seq, d)
	}
	return seq, ""
}

// crashSeq is the seq property of a node.
func crashSeq(n *e2eNodeReply) (int, bool) {
	var seq int
	if raw, ok := n.Properties["seq"]; !ok || json.Unmarshal(raw, &seq) != nil {
		return 0, false
	}
	return seq, true
}

func (cr *crashRun) violation(format string, args ...any) {
	cr.violations.Add(1)
	cr.t.Errorf("%s (seed %d)", fmt.Sprintf(format, args...), cr.seed)
}

// crashPost posts one write, moving to the next node after each retryable
// failure. Every attempt is bounded by crashAttemptTimeout and all of them
// by crashWriteBound; the idempotency key makes retrying an unknown
// outcome safe.
func crashPost(ctx context.Context, c *e2eAPIClient, nodes []*e2eNode, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, crashWriteBound)
	defer cancel()
	for attempt := 0; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, crashAttemptTimeout)
		err := c.call(actx, http.MethodPost, nodes[attempt%len(nodes)].url()+path, in, out)
		acancel()
		if err == nil || !e2eRetryable(err) {
			return err
		}
		if !crashBackoff(ctx, attempt) {
			return fmt.Errorf("not acknowledged in time: %w", err)
		}
	}
}

// crashBackoff waits before the next attempt (25ms doubling to 400ms); it
// reports false if ctx ends first.
func crashBackoff(ctx context.Context, attempt int) bool {
	backoff := time.NewTimer(min(25*time.Millisecond<<min(attempt, 4), 400*time.Millisecond))
	select {
	case <-backoff.C:
		return true
	case <-ctx.Done():
		backoff.Stop()
		return false
	}
}

// sleepBetweenFaults waits crashGapMin..crashGapMax, writes going on.
func (cr *crashRun) sleepBetweenFaults() {
	time.Sleep(crashGapMin + time.Duration(cr.rng.Int64N(int64(crashGapMax-crashGapMin))))
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
	ackedBefore := cr.acked.Load()
	var out time.Duration
	if f.pause {
		out = cr.pause(ctx, victim)
		cr.pauses++
		if f.leader {
			cr.leaderPauses++
		}
	} else {
		out = cr.kill(ctx, victim)
		cr.kills.one++
		if f.leader {
			cr.kills.oneLeader++
		}
	}
	cr.waitCaughtUp(ctx, victim)
	cr.waitProgress(ctx, crashMinAckedIn, fmt.Sprintf("after %s (%v) returned", victim.id, f))
	t.Logf("%v %s (leader %s, term %d): out %v, whole fault %v, %d writes acknowledged meanwhile (%d in all)",
		f, victim.id, leader.id, term, out.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		cr.acked.Load()-ackedBefore, cr.acked.Load())
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
	cr.killed(n)
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
// must survive: verifyKeys reads it all at the end.
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
		cr.killed(n)
	}
	if f.victims == 2 {
		cr.kills.two++
		// Writes that committed before the kill may still be answered
		// for a moment; after that, without a quorum, none can be, nor
		// a linearizable read.
		time.Sleep(time.Second)
		decided := cr.decided.Load()
		time.Sleep(2 * time.Second)
		if got := cr.decided.Load(); got != decided {
			cr.violation("%d writes or linearizable reads answered with two of three nodes down", got-decided)
		}
	} else {
		cr.kills.all++
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
	ackedBefore := cr.acked.Load()
	cr.waitProgress(ctx, crashMinAckedIn, fmt.Sprintf("after %v returned", f))
	t.Logf("%v (leader %s, term %d): whole fault %v, %d writes acknowledged after (%d in all)",
		f, leader.id, term, time.Since(start).Round(time.Millisecond), cr.acked.Load()-ackedBefore, cr.acked.Load())
}

// checkResumed checks that restarted n resumed from its data directory.
func (cr *crashRun) checkResumed(ctx context.Context, n *e2eNode) {
	cr.t.Helper()
	cr.cl.checkResumed(ctx, cr.t, n)
}

// killed counts n's process as killed, and whether it was taking a
// snapshot then.
func (cr *crashRun) killed(n *e2eNode) {
	cr.kills.processes++
	if crashKilledMidSnapshot(n.currentLog(cr.t)) {
		cr.kills.midSnapshot++
	}
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
	base := cr.acked.Load()
	cr.cl.eventually(ctx, crashProgressBound, fmt.Sprintf("%d acknowledged writes %s (seed %d)", k, when, cr.seed), func() (bool, string) {
		got := cr.acked.Load() - base
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

// verifyKeys reads every key on every node, stale (the node's own state)
// and linearizable, on 4 goroutines: each read must find the key's last
// acknowledged write or a later one of unknown outcome. Only transport
// errors and 503s are retried; anything else is a lost write.
func (cr *crashRun) verifyKeys(ctx context.Context) {
	keys := cr.allKeys()
	var next, reads, wrong atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(keys)); i = next.Add(1) - 1 {
				k := keys[i] // this goroutine's alone
				for _, n := range cr.cl.nodes {
					for _, stale := range []bool{true, false} {
						what := fmt.Sprintf("final linearizable read of %s on %s", k.id, n.id)
						if stale {
							what = fmt.Sprintf("final stale read of %s on %s", k.id, n.id)
						}
						reads.Add(1)
						got, err := cr.read(ctx, n, k.id, stale)
						if ae := (*e2eAPIError)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
							got, err = nil, nil
						}
						if err != nil {
							wrong.Add(1)
							cr.violation("LOST: %s: %v", what, err)
						} else if !cr.observe(k, got, what) {
							wrong.Add(1)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	cr.t.Logf("%d keys read on every node, stale and linearizable: %d reads, %d wrong", len(keys), reads.Load(), wrong.Load())
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

// crashBugMessages are the error lines a node logs when it finds itself
// in a state raft should never have put it in; the crash loop fails on any.
var crashBugMessages = []string{
	"raft truncated log entries this node had already applied: its state may differ from the cluster's",
	"snapshot restore moves the applied index backwards",
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

// largestSnapshot is the size in bytes of the largest snapshot kept in
// any node's data directory: with a bounded state it is the same at the
// end of a long soak as after a minute.
func (cr *crashRun) largestSnapshot() int64 {
	var largest int64
	for _, n := range cr.cl.nodes {
		states, err := filepath.Glob(filepath.Join(n.dataDir, "snapshots", "*", "state.bin"))
		if err != nil {
			cr.t.Errorf("%s: %v", n.dataDir, err)
		}
		for _, path := range states {
			if fi, err := os.Stat(path); err == nil {
				largest = max(largest, fi.Size())
			}
		}
	}
	return largest
}

// TestCrashKeyJudge checks the crash loop's own durability check: which
// values of a key it accepts after which outcomes.
func TestCrashKeyJudge(t *testing.T) {
	val := func(seq int, nonce string) *e2eNodeReply {
		return &e2eNodeReply{Properties: map[string]json.RawMessage{
			"writer": json.RawMessage(`"w0"`), "seq": json.RawMessage(e2eJSON(seq)), "nonce": json.RawMessage(e2eJSON(nonce))}}
	}
	props := func(seq int, nonce string) e2eProps {
		return e2eProps{"writer": `"w0"`, "seq": e2eJSON(seq), "nonce": e2eJSON(nonce)}
	}
	k := &crashKey{id: "k", acked: -1, maybe: map[int]*crashWrite{}}
	check := func(when string, got *e2eNodeReply, ok bool) {
		t.Helper()
		if _, why := k.judge(got); (why == "") != ok {
			t.Errorf("%s: judge(%v) = %q, want accepted %v", when, got, why, ok)
		}
	}
	check("new key", nil, true)
	check("new key", val(0, "a"), false) // never written
	k.unsure(0, props(0, "a"))
	check("create unknown", nil, true)
	check("create unknown", val(0, "a"), true)
	check("create unknown", val(0, "b"), false) // other properties
	k.ack(1, props(1, "b"))
	check("acked 1", nil, false)
	check("acked 1", val(0, "a"), false) // older than the acknowledged
	check("acked 1", val(1, "b"), true)
	check("acked 1", val(1, "x"), false)
	k.unsure(2, props(2, "c"))
	// 3 was rejected: never recorded.
	k.unsure(4, props(4, "d"))
	check("2 and 4 unknown", val(1, "b"), true)
	check("2 and 4 unknown", val(2, "c"), true)
	check("2 and 4 unknown", val(3, "z"), false)
	check("2 and 4 unknown", val(4, "d"), true)
	check("2 and 4 unknown", &e2eNodeReply{Properties: map[string]json.RawMessage{"seq": json.RawMessage(`"1"`)}}, false)
	k.ack(5, props(5, "e"))
	check("acked 5", val(4, "d"), false)
	check("acked 5", val(5, "e"), true)
	if len(k.maybe) != 1 {
		t.Errorf("after acking 5, %d writes may be stored, want 1", len(k.maybe))
	}
}
