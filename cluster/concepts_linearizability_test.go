package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/linearizability"
)

// Concurrent clients, each with an authority.Service over its node, reserve,
// transition and read a few concept ids while the leader is stopped and
// later restarted; porcupine then checks the history against the
// sequential model of the reservation protocol. Clients i and i+4 share an
// owner and its request refs, so the same request arrives through two
// instances (replays) and each may act on a claim the other already moved
// (stale fences); some transitions are stale on purpose. The TTL is an
// hour: expiry is not part of this run.
func TestConceptsLinearizableAcrossLeaderStop(t *testing.T) {
	const (
		clients   = 8
		opTimeout = 2 * time.Second
		// Progress-driven phases, as in TestNodesLinearizableAcrossLeaderStop.
		minOK                 = 400
		minOKAfterStop        = 150
		minEffective          = 80 // created, reclaimed or transitioned
		minEffectiveAfterStop = 25
		// Each phase is bounded, so a run that stalls ends (and fails its
		// minimums) in about 20 s; a healthy one takes a few seconds.
		phaseLimit = 6 * time.Second
	)
	policies, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{{Namespace: "LIN", Min: 1, Max: 999, PolicyVersion: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	r := &conceptRun{t: t, c: c, h: linearizability.NewHistory(), policies: policies,
		seed: uint64(time.Now().UnixNano()), opTimeout: opTimeout,
		claims: map[string]uint64{}, dead: map[int]bool{}, outcomes: map[string]int{}, unknown: map[string]int{}}
	t.Logf("seed %d (it fixes each client's choices, not the interleaving)", r.seed)

	begin := time.Now()
	runCtx, stopClients := context.WithTimeout(context.Background(), 4*phaseLimit)
	// Also on an early t.Fatal: no client may outlive the test.
	var wg sync.WaitGroup
	defer func() {
		stopClients()
		wg.Wait()
	}()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.client(runCtx, i)
		}()
	}

	// waitOK waits until ok decided and eff effective calls reach nOK and
	// nEff, or phaseLimit passes.
	waitOK := func(ok, eff *atomic.Int64, nOK, nEff int64) {
		c.Eventually(phaseLimit, func() bool { return ok.Load() >= nOK && eff.Load() >= nEff })
	}
	waitOK(&r.ok, &r.effective, minOK/3, minEffective/3)
	old := c.WaitLeader(5 * time.Second)
	r.h.Mark("cluster", fmt.Sprintf("stopping leader n%d", old+1))
	c.Stop(old)
	r.stopped.Store(true)
	r.h.Mark("cluster", fmt.Sprintf("leader n%d stopped", old+1))
	elected := time.Now()
	newLeader := c.WaitLeader(10 * time.Second)
	r.h.Mark("cluster", fmt.Sprintf("n%d leads", newLeader+1))
	t.Logf("stopped leader n%d at %v; n%d leads %v later", old+1, time.Since(begin).Round(time.Millisecond), newLeader+1, time.Since(elected).Round(time.Millisecond))

	waitOK(&r.okAfterStop, &r.effectiveAfterStop, minOKAfterStop, minEffectiveAfterStop)
	c.Restart(old)
	r.h.Mark("cluster", fmt.Sprintf("n%d restarted", old+1))
	waitOK(&r.ok, &r.effective, minOK+minOK/3, minEffective+minEffective/3)
	stopClients()
	wg.Wait()

	counts := r.h.Counts()
	t.Logf("%d operations in %v: %d decided (%d after the leader stop), %d effective (%d after the stop), %d outcome unknown %v, %d dropped (%d reads, %d writes certainly not applied); outcomes %s; ids used %d",
		counts.Returned+counts.Unknown+counts.Dropped, time.Since(begin).Round(time.Millisecond),
		r.ok.Load(), r.okAfterStop.Load(), r.effective.Load(), r.effectiveAfterStop.Load(),
		counts.Unknown, r.tally(r.unknown), counts.Dropped, r.droppedReads.Load(), r.droppedWrites.Load(), r.tally(r.outcomes), r.idsUsed())
	if counts.Pending != 0 {
		t.Errorf("%d operations were never resolved", counts.Pending)
	}
	if res := linearizability.Check(t, linearizability.ConceptsModel(), r.h, 10*time.Second); res != porcupine.Ok {
		t.Fatalf("linearizability check: %s (seed %d)", res, r.seed)
	}
	for _, u := range r.unexpectedErrors() {
		t.Errorf("unexpected error (neither a decided outcome nor unavailable): %s", u)
	}
	if n := r.ok.Load(); n < minOK {
		t.Errorf("only %d operations were decided, want at least %d: a history of nothing proves nothing", n, minOK)
	}
	if n := r.okAfterStop.Load(); n < minOKAfterStop {
		t.Errorf("only %d operations were decided after the leader stopped, want at least %d", n, minOKAfterStop)
	}
	if n := r.effective.Load(); n < minEffective {
		t.Errorf("only %d calls created, reclaimed or transitioned a claim, want at least %d", n, minEffective)
	}
	if n := r.effectiveAfterStop.Load(); n < minEffectiveAfterStop {
		t.Errorf("only %d calls created, reclaimed or transitioned a claim after the leader stopped, want at least %d", n, minEffectiveAfterStop)
	}
	c.WaitConverged(10 * time.Second)
}

// conceptRun is one run of the concept clients: the cluster, the history,
// the tallies and what the clients learned together.
type conceptRun struct {
	t         *testing.T
	c         *clustertest.Cluster
	h         *linearizability.History
	policies  *authority.PolicySet
	seed      uint64
	opTimeout time.Duration
	stopped   atomic.Bool

	ok, okAfterStop, effective, effectiveAfterStop atomic.Int64
	droppedReads, droppedWrites                    atomic.Int64

	mu       sync.Mutex
	outcomes map[string]int // "kind/outcome" of decided calls
	unknown  map[string]int // by error code
	odd      []string       // errors that are neither decided nor unavailable
	// claims maps a reservation id to the fence its claim started at,
	// learned from any record seen in the reserved state (a claim starts
	// reserved and never returns to it). The model names a reservation by
	// owner, request and that fence.
	claims map[string]uint64
	// dead holds ids seen landed or tombstoned: they can never be claimed
	// again, so reserves and reads move on to the next ids (holders still
	// take their landed claims on to a tombstone).
	dead map[int]bool
	used int
}

// Clients work on the window lowest ids not known to be dead.
const conceptWindow = 4

// conceptHolding is a reservation a client may present in a transition.
type conceptHolding struct {
	request, reservationID, fingerprint string
	claim, fence                        uint64
	state                               authority.State
}

func conceptID(n int) string { return fmt.Sprintf("LIN-%d", n) }

// pickID returns one of the live window's ids.
func (r *conceptRun) pickID(rng *rand.Rand) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var live []int
	for n := 1; len(live) < conceptWindow; n++ {
		if !r.dead[n] {
			live = append(live, n)
		}
	}
	n := live[rng.IntN(len(live))]
	r.used = max(r.used, n)
	return conceptID(n)
}

func (r *conceptRun) idsUsed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used
}

// learn records what a record tells every client: the claim fence of its
// reservation and whether its id is dead. It returns the claim fence, or
// 0 if it is not known.
func (r *conceptRun) learn(rec *authority.Record) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.State == authority.Reserved {
		r.claims[rec.ReservationID] = rec.Fence
	}
	if rec.State == authority.Landed || rec.State == authority.Tombstoned {
		r.dead[int(rec.Number)] = true
	}
	return r.claims[rec.ReservationID]
}

// node is the node client i talks to: its own while it runs, else another.
func (r *conceptRun) node(i int) *cluster.Node {
	if n := r.c.Node(i % r.c.Size()); n != nil {
		return n
	}
	for _, j := range r.c.Running() {
		if n := r.c.Node((j + i) % r.c.Size()); n != nil {
			return n
		}
	}
	return nil
}

// client runs random calls until ctx ends. It remembers the reservations
// its owner holds (the last record seen of each) and the last one it lost
// per id, which it sometimes presents on purpose.
func (r *conceptRun) client(ctx context.Context, i int) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(i)))
	owner := fmt.Sprintf("o%d", i%4)
	held := map[string]conceptHolding{}
	lost := map[string]conceptHolding{}
	for ctx.Err() == nil {
		n := r.node(i)
		if n == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		svc := authority.NewService(n, n, r.policies)
		id := r.pickID(rng)
		var h conceptHolding
		p := rng.IntN(20)
		if mine := heldIDs(held); p < 11 && len(mine) > 0 {
			id = mine[rng.IntN(len(mine))]
			h = held[id]
		} else if p == 11 && lost[id].request != "" {
			h = lost[id]
		}
		in := linearizability.ConceptInput{ID: id, Owner: owner}
		switch {
		case h.request != "":
		case p < 16:
			in.Kind, in.Request = linearizability.ConceptReserve, fmt.Sprintf("%s-r%d", owner, rng.IntN(3))
		default:
			in = linearizability.ConceptInput{Kind: linearizability.ConceptGet, ID: id}
		}
		if h.request != "" {
			in.Kind, in.Request, in.Claim, in.Expect = linearizability.ConceptTransition, h.request, h.claim, h.fence
			in.Action = conceptAction(rng, h.state)
			if rng.IntN(8) == 0 && h.fence > 1 {
				in.Expect-- // stale on purpose (or a retry of the step before)
			}
		}
		rec, out, ok := r.do(svc, i, in, h)
		if ok && out.Outcome == linearizability.OutcomeStaleFence && h == held[id] {
			// Someone moved the claim on; keep the old holding to present
			// on purpose, and relearn the claim from a later record.
			lost[id] = h
			delete(held, id)
		}
		if !ok || rec == nil {
			continue
		}
		claim := r.learn(rec)
		switch {
		case rec.OwnerRef == owner && claim != 0:
			hh := conceptHolding{request: rec.RequestRef, reservationID: rec.ReservationID, fingerprint: rec.Fingerprint,
				claim: claim, fence: rec.Fence, state: rec.State}
			if rec.State == authority.Released || rec.State == authority.Tombstoned {
				// Nothing is left to do with it but present it stale.
				lost[id] = hh
				delete(held, id)
			} else {
				held[id] = hh
			}
		case rec.OwnerRef != "" && rec.OwnerRef != owner:
			if hh, have := held[id]; have {
				lost[id] = hh
				delete(held, id)
			}
		}
	}
}

// heldIDs lists the ids of held, in order (the choice among them is the
// seeded generator's, not map order's).
func heldIDs(held map[string]conceptHolding) []string {
	ids := make([]string, 0, len(held))
	for id := range held {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// conceptAction mostly takes a step the lifecycle allows from state, and
// sometimes any action at all.
func conceptAction(rng *rand.Rand, state authority.State) string {
	all := []string{linearizability.ActionMaterialize, linearizability.ActionLand, linearizability.ActionRelease, linearizability.ActionTombstone}
	if rng.IntN(8) == 0 {
		return all[rng.IntN(len(all))]
	}
	p := rng.IntN(10)
	switch state {
	case authority.Reserved:
		if p < 6 {
			return linearizability.ActionMaterialize
		}
		return linearizability.ActionRelease
	case authority.Materialized:
		if p < 2 {
			return linearizability.ActionLand
		}
		return linearizability.ActionRelease
	case authority.Landed:
		if p < 5 {
			return linearizability.ActionTombstone
		}
		return linearizability.ActionRelease
	}
	return all[rng.IntN(len(all))]
}

// do runs one call with its own deadline, records it, and returns the
// record it reported (nil for outcomes without one), its output and
// whether it was decided.
func (r *conceptRun) do(svc *authority.Service, client int, in linearizability.ConceptInput, h conceptHolding) (*authority.Record, linearizability.ConceptOutput, bool) {
	afterStop := r.stopped.Load()
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	op := r.h.Call(client, in)
	var out linearizability.ConceptOutput
	var rec *authority.Record
	var err error
	switch in.Kind {
	case linearizability.ConceptReserve:
		var res *authority.ReserveResult
		res, err = svc.Reserve(ctx, authority.ReserveRequest{ConceptID: in.ID, TenantRef: "tenant-lin", RepositoryRef: "repo-lin",
			OwnerRef: in.Owner, RequestRef: in.Request, PurposeDigest: "sha256:lin", TTLMs: time.Hour.Milliseconds()})
		if err == nil {
			rec = res.Record
			switch {
			case res.Created:
				out = conceptRecord(linearizability.OutcomeCreated, rec)
			case res.Reclaimed:
				out = conceptRecord(linearizability.OutcomeReclaimed, rec)
			case res.Replayed:
				out = conceptRecord(linearizability.OutcomeReplayed, rec)
			}
		} else if e := (*errs.Error)(nil); errors.As(err, &e) && errors.Is(err, errs.Conflict) {
			out, err = conceptConflict(r.t, e), nil
		}
	case linearizability.ConceptTransition:
		var res *authority.TransitionResult
		res, err = svc.Transition(ctx, authority.TransitionRequest{ConceptID: in.ID, TenantRef: "tenant-lin", OwnerRef: in.Owner,
			ReservationID: h.reservationID, Fingerprint: h.fingerprint, ExpectedFence: in.Expect, Action: authority.Action(in.Action)})
		switch {
		case err == nil && res.Replayed:
			rec, out = res.Record, conceptRecord(linearizability.OutcomeReplayed, res.Record)
		case err == nil:
			rec, out = res.Record, conceptRecord(linearizability.OutcomeOK, res.Record)
		default:
			out, err = conceptDecided(err)
		}
	case linearizability.ConceptGet:
		rec, err = svc.Get(ctx, in.ID, "tenant-lin")
		if err == nil {
			out = conceptRecord(linearizability.OutcomeOK, rec)
		} else if errors.Is(err, errs.NotFound) {
			out, err = linearizability.ConceptOutput{Outcome: linearizability.OutcomeNotFound}, nil
		}
	}
	if err != nil {
		write := in.Kind != linearizability.ConceptGet
		op.Fail(err, write)
		code := errs.CodeOf(err)
		r.mu.Lock()
		defer r.mu.Unlock()
		if code != errs.CodeUnavailable {
			r.odd = append(r.odd, fmt.Sprintf("%s: %v", linearizability.ConceptsModel().DescribeOperation(in, linearizability.UnknownOutput{}), err))
		}
		switch {
		case !write:
			r.droppedReads.Add(1)
		case linearizability.CertainlyNotApplied(err):
			r.droppedWrites.Add(1)
		default:
			r.unknown[string(code)]++
		}
		return nil, out, false
	}
	op.Return(out)
	r.ok.Add(1)
	if afterStop {
		r.okAfterStop.Add(1)
	}
	switch out.Outcome {
	case linearizability.OutcomeCreated, linearizability.OutcomeReclaimed:
		r.effectiveCall(afterStop)
	case linearizability.OutcomeOK:
		if in.Kind == linearizability.ConceptTransition {
			r.effectiveCall(afterStop)
		}
	}
	r.mu.Lock()
	r.outcomes[fmt.Sprintf("%v/%s", in.Kind, out.Outcome)]++
	r.mu.Unlock()
	return rec, out, true
}

func (r *conceptRun) effectiveCall(afterStop bool) {
	r.effective.Add(1)
	if afterStop {
		r.effectiveAfterStop.Add(1)
	}
}

// conceptRecord is the model's view of a returned record.
func conceptRecord(outcome linearizability.ConceptOutcome, rec *authority.Record) linearizability.ConceptOutput {
	return linearizability.ConceptOutput{Outcome: outcome, State: string(rec.State), Fence: rec.Fence,
		Owner: rec.OwnerRef, Request: rec.RequestRef, Visibility: string(rec.Visibility)}
}

// conceptConflict is the model's view of a reserve's conflict: the
// winner's public fields from the error's detail.
func conceptConflict(t *testing.T, e *errs.Error) linearizability.ConceptOutput {
	out := linearizability.ConceptOutput{Outcome: linearizability.OutcomeConflict}
	out.State, _ = e.Detail["state"].(string)
	out.Visibility, _ = e.Detail["visibility"].(string)
	switch f := e.Detail["fence"].(type) {
	case uint64:
		out.Fence = f
	case float64:
		out.Fence = uint64(f)
	default:
		t.Errorf("conflict detail fence %#v (%T) is not a number: %v", e.Detail["fence"], e.Detail["fence"], e)
	}
	return out
}

// conceptDecided turns a transition's domain failure into its outcome; any
// other error is returned as it is.
func conceptDecided(err error) (linearizability.ConceptOutput, error) {
	for _, d := range []struct {
		target  error
		outcome linearizability.ConceptOutcome
	}{
		{errs.StaleFence, linearizability.OutcomeStaleFence},
		{errs.Conflict, linearizability.OutcomeConflict},
		{errs.Expired, linearizability.OutcomeExpired},
		{errs.NotFound, linearizability.OutcomeNotFound},
	} {
		if errors.Is(err, d.target) {
			return linearizability.ConceptOutput{Outcome: d.outcome}, nil
		}
	}
	return linearizability.ConceptOutput{}, err
}

func (r *conceptRun) tally(m map[string]int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", k, n))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func (r *conceptRun) unexpectedErrors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.odd...)
}
