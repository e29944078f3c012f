package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
	"github.com/arbiterhq/arbiter/nodes"
)

// Concepts is the workload of the concept reservation protocol: clients,
// each with an authority.Service over its node, reserve, transition and
// linearizably read a few concept ids. Clients i and i+4 share an owner and
// its request refs, so the same request arrives through two instances
// (replays) and each may act on a claim the other already moved (stale
// fences); some transitions are stale on purpose. The TTL is an hour:
// expiry is not part of a run.
//
// Generation g's ids are LIN-(g*1000+1), LIN-(g*1000+2), ...; clients work
// on the lowest conceptWindow of them not known to be dead, so a landed or
// tombstoned id, which can never be claimed again, makes room for the
// next. What one client learns (claim fences, dead ids) every client uses,
// so it lives in the workload: make one with NewConcepts.
type Concepts struct {
	// StaleReads reads claims from the local replica instead of
	// linearizably: a deliberate bug, for the control that shows the
	// harness catches one.
	StaleReads bool

	policies *authority.PolicySet

	mu sync.Mutex
	// claims maps a reservation id to the fence its claim started at,
	// learned from any record seen in the reserved state (a claim starts
	// reserved and never returns to it). The model names a reservation by
	// owner, request and that fence.
	claims map[string]uint64
	// dead holds ids seen landed or tombstoned: they can never be claimed
	// again, so reserves and reads move on to the next ids (holders still
	// take their landed claims on to a tombstone).
	dead map[uint64]bool
	// seen holds every id some decided call returned a record of: each
	// replica must hold it at the end.
	seen map[string]bool
}

// NewConcepts returns the concepts workload.
func NewConcepts() *Concepts {
	w := &Concepts{}
	w.reset()
	return w
}

const (
	conceptsTenant    = "tenant-chaos"
	conceptsNamespace = "LIN"
	conceptsPolicy    = "1"
	// conceptsPerGeneration spaces generations' ids apart: generation g
	// owns g*conceptsPerGeneration+1 and up, far more than a phase kills.
	conceptsPerGeneration = 1000
	// conceptWindow is how many live ids of a generation clients share:
	// few enough that they contend, each id's history short enough for
	// porcupine.
	conceptWindow = 4
)

func (w *Concepts) Name() string {
	if w.StaleReads {
		return "concepts-stale-reads"
	}
	return "concepts"
}
func (w *Concepts) Model() (porcupine.Model, bool) { return lin.ConceptsModel(), true }

// Setup builds the one policy that covers every generation's ids, and
// forgets what clients of an earlier run learned (one workload value may
// serve many runs: -count, soaks).
func (w *Concepts) Setup(context.Context, *clustertest.Cluster) error {
	policies, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{{
		Namespace: conceptsNamespace, Min: 1, Max: conceptsPerGeneration*conceptsPerGeneration - 1, PolicyVersion: conceptsPolicy}})
	if err != nil {
		return err
	}
	w.policies = policies
	w.reset()
	return nil
}

func (w *Concepts) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.claims, w.dead, w.seen = map[string]uint64{}, map[uint64]bool{}, map[string]bool{}
}

func (w *Concepts) Client(i int, seed uint64) Client {
	return &conceptsClient{w: w, id: i, owner: fmt.Sprintf("o%d", i%4), rng: rand.New(rand.NewPCG(seed, uint64(i))),
		held: map[string]conceptHolding{}, lost: map[string]conceptHolding{}}
}

func conceptID(n uint64) string { return fmt.Sprintf("%s-%d", conceptsNamespace, n) }

func conceptGeneration(n uint64) int { return int(n / conceptsPerGeneration) }

// pickID returns one of generation g's live window of ids.
func (w *Concepts) pickID(rng *rand.Rand, g int) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var live []uint64
	for n := uint64(g)*conceptsPerGeneration + 1; len(live) < conceptWindow; n++ {
		if !w.dead[n] {
			live = append(live, n)
		}
	}
	return live[rng.IntN(len(live))]
}

// learn records what a record tells every client: the claim fence of its
// reservation and whether its id is dead. It returns the claim fence, or
// 0 if it is not known.
func (w *Concepts) learn(rec *authority.Record) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen[rec.ConceptID] = true
	if rec.State == authority.Reserved {
		w.claims[rec.ReservationID] = rec.Fence
	}
	if rec.State == authority.Landed || rec.State == authority.Tombstoned {
		w.dead[rec.Number] = true
	}
	return w.claims[rec.ReservationID]
}

// conceptHolding is a reservation a client may present in a transition.
type conceptHolding struct {
	request, reservationID, fingerprint string
	claim, fence                        uint64
	prev                                uint64 // the fence the claim's last write replaced
	state                               authority.State
}

// conceptsClient remembers the reservations its owner holds (the last
// record seen of each) and the last one it lost per id, which it
// sometimes presents on purpose.
type conceptsClient struct {
	w     *Concepts
	id    int
	owner string
	rng   *rand.Rand
	held  map[string]conceptHolding
	lost  map[string]conceptHolding
}

func (c *conceptsClient) Step(node *cluster.Node, rec *Recorder) {
	in, h := c.next(rec.Generation(c.rng))
	var reads fsm.Reader = node
	if c.w.StaleReads && in.Kind == lin.ConceptGet {
		reads = localReader{node}
	}
	record, out, ok := c.do(authority.NewService(node, reads, c.w.policies), in, h, rec)
	if ok && out.Outcome == lin.OutcomeStaleFence && h == c.held[in.ID] {
		// Someone moved the claim on; keep the old holding to present
		// on purpose, and relearn the claim from a later record.
		c.lost[in.ID] = h
		delete(c.held, in.ID)
	}
	if ok && record != nil {
		c.observe(in.ID, record)
	}
}

// next chooses the next call on generation g's ids: mostly a transition
// of a claim the owner holds, else a reserve or a read, and now and then
// a lost claim presented again.
func (c *conceptsClient) next(g int) (lin.ConceptInput, conceptHolding) {
	id := conceptID(c.w.pickID(c.rng, g))
	var h conceptHolding
	p := c.rng.IntN(20)
	if mine := c.heldIDs(g); p < 11 && len(mine) > 0 {
		id = mine[c.rng.IntN(len(mine))]
		h = c.held[id]
	} else if p == 11 && c.lost[id].request != "" {
		h = c.lost[id]
	}
	switch {
	case h.request != "":
		in := lin.ConceptInput{Kind: lin.ConceptTransition, ID: id, Owner: c.owner, Request: h.request, Claim: h.claim, Expect: h.fence,
			Action: conceptAction(c.rng, h.state)}
		if c.rng.IntN(8) == 0 && h.prev > 0 {
			in.Expect = h.prev // stale on purpose (or a retry of the step before)
		}
		return in, h
	case p < 16:
		return lin.ConceptInput{Kind: lin.ConceptReserve, ID: id, Owner: c.owner, Request: fmt.Sprintf("%s-r%d", c.owner, c.rng.IntN(3))}, h
	}
	return lin.ConceptInput{Kind: lin.ConceptGet, ID: id}, h
}

// heldIDs lists the ids of generation g the client holds, in order (the
// choice among them is the seeded generator's, not map order's). Claims
// of older generations are left alone: each id's history must stay short.
func (c *conceptsClient) heldIDs(g int) []string {
	ids := make([]string, 0, len(c.held))
	for id := range c.held {
		if n, err := authority.ParseConceptID(id); err == nil && conceptGeneration(n.Number) == g {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// observe updates what the client holds from a record a decided call
// returned.
func (c *conceptsClient) observe(id string, rec *authority.Record) {
	claim := c.w.learn(rec)
	switch {
	case rec.OwnerRef == c.owner && claim != 0:
		h := conceptHolding{request: rec.RequestRef, reservationID: rec.ReservationID, fingerprint: rec.Fingerprint,
			claim: claim, fence: rec.Fence, prev: rec.PrevFence, state: rec.State}
		if rec.State == authority.Released || rec.State == authority.Tombstoned {
			// Nothing is left to do with it but present it stale.
			c.lost[id] = h
			delete(c.held, id)
		} else {
			c.held[id] = h
		}
	case rec.OwnerRef != "" && rec.OwnerRef != c.owner:
		if h, have := c.held[id]; have {
			c.lost[id] = h
			delete(c.held, id)
		}
	}
}

// conceptAction mostly takes a step the lifecycle allows from state, and
// sometimes any action at all.
func conceptAction(rng *rand.Rand, state authority.State) string {
	all := []string{lin.ActionMaterialize, lin.ActionLand, lin.ActionRelease, lin.ActionTombstone}
	if rng.IntN(8) == 0 {
		return all[rng.IntN(len(all))]
	}
	p := rng.IntN(10)
	switch state {
	case authority.Reserved:
		if p < 6 {
			return lin.ActionMaterialize
		}
		return lin.ActionRelease
	case authority.Materialized:
		if p < 2 {
			return lin.ActionLand
		}
		return lin.ActionRelease
	case authority.Landed:
		if p < 5 {
			return lin.ActionTombstone
		}
		return lin.ActionRelease
	}
	return all[rng.IntN(len(all))]
}

// do runs one call, records it, and returns the record it reported (nil
// for outcomes without one), its output and whether it was decided.
func (c *conceptsClient) do(svc *authority.Service, in lin.ConceptInput, h conceptHolding, rec *Recorder) (*authority.Record, lin.ConceptOutput, bool) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	call := rec.Call(c.id, in)
	var record *authority.Record
	var out lin.ConceptOutput
	var err error
	switch in.Kind {
	case lin.ConceptReserve:
		record, out, err = reserveConcept(ctx, svc, in)
	case lin.ConceptTransition:
		record, out, err = transitionConcept(ctx, svc, in, h)
	case lin.ConceptGet:
		record, out, err = getConcept(ctx, svc, in)
	}
	var odd *unmappable
	switch {
	case errors.As(err, &odd):
		call.Unexpected(odd.Error())
		return nil, out, false
	case err != nil:
		call.Failed(err, in.Kind != lin.ConceptGet)
		return nil, out, false
	}
	effective := out.Outcome == lin.OutcomeCreated || out.Outcome == lin.OutcomeReclaimed ||
		in.Kind == lin.ConceptTransition && out.Outcome == lin.OutcomeOK
	call.Decided(out, fmt.Sprintf("%v/%s", in.Kind, out.Outcome), effective)
	if effective && record != nil {
		rec.ReadBack(fmt.Sprintf("%v of %s (reservation %s, fence %d)", in.Kind, record.ConceptID, record.ReservationID, record.Fence),
			c.w.readBackConcept(*record))
	}
	return record, out, true
}

// readBackConcept checks that a replica holds the acknowledged claim at
// its fence or a later one, or a later claim of the id (the acknowledged
// one released or expired, then reclaimed by another request).
func (w *Concepts) readBackConcept(acked authority.Record) func(context.Context, *cluster.Node) error {
	return func(ctx context.Context, node *cluster.Node) error {
		got, err := authority.NewService(node, localReader{node}, w.policies).Get(ctx, acked.ConceptID, conceptsTenant)
		switch {
		case err != nil:
			return err
		case got.ReservationID == acked.ReservationID && got.Fence < acked.Fence:
			return fmt.Errorf("claim at fence %d (%s), acknowledged at fence %d (%s)", got.Fence, got.State, acked.Fence, acked.State)
		}
		return nil
	}
}

func reserveConcept(ctx context.Context, svc *authority.Service, in lin.ConceptInput) (*authority.Record, lin.ConceptOutput, error) {
	res, err := svc.Reserve(ctx, authority.ReserveRequest{ConceptID: in.ID, TenantRef: conceptsTenant, RepositoryRef: "repo-chaos",
		OwnerRef: in.Owner, RequestRef: in.Request, PurposeDigest: "sha256:chaos", TTLMs: time.Hour.Milliseconds()})
	if e := (*errs.Error)(nil); errors.As(err, &e) && errors.Is(err, errs.Conflict) {
		out, err := conceptConflict(e)
		return nil, out, err
	}
	if err != nil {
		return nil, lin.ConceptOutput{}, err
	}
	switch {
	case res.Created:
		return res.Record, conceptRecord(lin.OutcomeCreated, res.Record), nil
	case res.Reclaimed:
		return res.Record, conceptRecord(lin.OutcomeReclaimed, res.Record), nil
	case res.Replayed:
		return res.Record, conceptRecord(lin.OutcomeReplayed, res.Record), nil
	}
	return nil, lin.ConceptOutput{}, &unmappable{fmt.Sprintf("reserve of %s returned %v neither created, reclaimed nor replayed", in.ID, res.Record)}
}

func transitionConcept(ctx context.Context, svc *authority.Service, in lin.ConceptInput, h conceptHolding) (*authority.Record, lin.ConceptOutput, error) {
	res, err := svc.Transition(ctx, authority.TransitionRequest{ConceptID: in.ID, TenantRef: conceptsTenant, OwnerRef: in.Owner,
		ReservationID: h.reservationID, Fingerprint: h.fingerprint, ExpectedFence: in.Expect, Action: authority.Action(in.Action)})
	switch {
	case err != nil:
		out, err := conceptDecided(err)
		return nil, out, err
	case res.Replayed:
		return res.Record, conceptRecord(lin.OutcomeReplayed, res.Record), nil
	}
	return res.Record, conceptRecord(lin.OutcomeOK, res.Record), nil
}

func getConcept(ctx context.Context, svc *authority.Service, in lin.ConceptInput) (*authority.Record, lin.ConceptOutput, error) {
	record, err := svc.Get(ctx, in.ID, conceptsTenant)
	switch {
	case errors.Is(err, errs.NotFound):
		return nil, lin.ConceptOutput{Outcome: lin.OutcomeNotFound}, nil
	case err != nil:
		return nil, lin.ConceptOutput{}, err
	}
	return record, conceptRecord(lin.OutcomeOK, record), nil
}

// conceptRecord is the model's view of a returned record.
func conceptRecord(outcome lin.ConceptOutcome, rec *authority.Record) lin.ConceptOutput {
	return lin.ConceptOutput{Outcome: outcome, State: string(rec.State), Fence: rec.Fence,
		Owner: rec.OwnerRef, Request: rec.RequestRef, Visibility: string(rec.Visibility)}
}

// unmappable is a result the model cannot take: the call is left out of
// the history and the run fails (Call.Unexpected).
type unmappable struct{ what string }

func (m *unmappable) Error() string { return m.what }

// conceptConflict is the model's view of a reserve's conflict: the
// winner's public fields from the error's detail.
func conceptConflict(e *errs.Error) (lin.ConceptOutput, error) {
	out := lin.ConceptOutput{Outcome: lin.OutcomeConflict}
	out.State, _ = e.Detail["state"].(string)
	out.Visibility, _ = e.Detail["visibility"].(string)
	switch f := e.Detail["fence"].(type) {
	case uint64:
		out.Fence = f
	case float64:
		out.Fence = uint64(f)
	case json.Number: // decoded from a JSON answer, exactly
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return out, &unmappable{fmt.Sprintf("conflict detail fence %q is not a fence: %v", f, e)}
		}
		out.Fence = n
	default:
		return out, &unmappable{fmt.Sprintf("conflict detail fence %#v (%T) is not a number: %v", e.Detail["fence"], e.Detail["fence"], e)}
	}
	return out, nil
}

// conceptDecided turns a transition's domain failure into its outcome; any
// other error is returned as it is.
func conceptDecided(err error) (lin.ConceptOutput, error) {
	for _, d := range []struct {
		target  error
		outcome lin.ConceptOutcome
	}{
		{errs.StaleFence, lin.OutcomeStaleFence},
		{errs.Conflict, lin.OutcomeConflict},
		{errs.Expired, lin.OutcomeExpired},
		{errs.NotFound, lin.OutcomeNotFound},
	} {
		if errors.Is(err, d.target) {
			return lin.ConceptOutput{Outcome: d.outcome}, nil
		}
	}
	return lin.ConceptOutput{}, err
}

// Verify lists every claim of the run's tenant from node's own replica and
// requires each to be a record the protocol could have written, and every
// id a client saw a record of to be there.
func (w *Concepts) Verify(ctx context.Context, node *cluster.Node) error {
	svc := authority.NewService(node, localReader{node}, w.policies)
	found := map[string]bool{}
	var problems []error
	cursor := ""
	for pages := 0; ; pages++ {
		if pages == 1000 {
			return errors.Join(append(problems, fmt.Errorf("more than 1000 pages of %s claims", conceptsTenant))...)
		}
		page, err := svc.List(ctx, authority.ListRequest{TenantRef: conceptsTenant, After: cursor, Limit: nodes.MaxLabelPage})
		if err != nil {
			return errors.Join(append(problems, err)...)
		}
		for _, rec := range page.Records {
			found[rec.ConceptID] = true
			problems = append(problems, checkConceptRecord(rec))
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range w.seen {
		if !found[id] {
			problems = append(problems, fmt.Errorf("%s: a client saw its claim, this replica does not hold it", id))
		}
	}
	return errors.Join(problems...)
}

// checkConceptRecord requires what every record the protocol writes
// holds: the policy's namespace and range, a holder, a fence, a lifecycle
// state, and the visibility landing and tombstoning leave behind.
func checkConceptRecord(rec *authority.Record) error {
	var problems []error
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf("%s: "+format, append([]any{rec.ConceptID}, args...)...))
	}
	if rec.ConceptID != conceptID(rec.Number) || rec.Namespace != conceptsNamespace || rec.PolicyVersion != conceptsPolicy ||
		rec.Number < rec.RangeMin || rec.Number > rec.RangeMax {
		bad("number %d of %s under policy %q %d..%d", rec.Number, rec.Namespace, rec.PolicyVersion, rec.RangeMin, rec.RangeMax)
	}
	if rec.Fence < 1 {
		bad("fence %d", rec.Fence)
	}
	if rec.OwnerRef == "" || rec.RequestRef == "" || rec.ReservationID == "" || rec.Fingerprint == "" {
		bad("owner %q, request %q, reservation %q, fingerprint %q", rec.OwnerRef, rec.RequestRef, rec.ReservationID, rec.Fingerprint)
	}
	switch rec.State {
	case authority.Reserved, authority.Materialized, authority.Released, authority.Expired:
	case authority.Landed:
		if rec.Visibility == authority.VisibilityNone {
			bad("landed without visibility")
		}
	case authority.Tombstoned:
		if rec.Visibility != authority.VisibilityExternal {
			bad("tombstoned with visibility %q", rec.Visibility)
		}
	default:
		bad("state %q", rec.State)
	}
	switch rec.Visibility {
	case authority.VisibilityNone, authority.VisibilityRepository, authority.VisibilityExternal:
	default:
		bad("visibility %q", rec.Visibility)
	}
	return errors.Join(problems...)
}

// localReader answers every query from the node's own replica:
// authority.Service reads linearizably only, and Verify must see what
// this replica holds, not what the leader does.
type localReader struct{ r fsm.Reader }

func (l localReader) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	q.Stale = true
	return l.r.Query(ctx, q)
}

// RewriteHistory turns every fence in the history (claims, expected
// fences, the fences outputs report) into its order of issue on its id
// (1, 2, 3, ...), which is what the model knows fences by. Fences are
// the log indexes of the writes that issued them (set_index), opaque
// until the run is over; every write of a claim is a node_create or
// node_cas event of its node in the change feed, which lists them all,
// in order.
func (w *Concepts) RewriteHistory(ctx context.Context, node *cluster.Node, h *lin.History) error {
	writes, err := feedEvents(ctx, node, func(e fsm.Event) bool {
		return strings.HasPrefix(e.Key, conceptNodePrefix) && (e.Kind == "node_create" || e.Kind == "node_cas")
	})
	if err != nil {
		return err
	}
	order := newFenceOrder()
	for _, e := range writes {
		order.add(strings.TrimPrefix(e.Key, conceptNodePrefix), e.Index)
	}
	h.Rewrite(func(input, output any) (any, any) {
		in := input.(lin.ConceptInput)
		in.Claim, in.Expect = order.ordinal(in.ID, in.Claim), order.ordinal(in.ID, in.Expect)
		if out, ok := output.(lin.ConceptOutput); ok {
			out.Fence = order.ordinal(in.ID, out.Fence)
			output = out
		}
		return in, output
	})
	return order.err()
}

// conceptNodePrefix starts the node id of every concept claim.
const conceptNodePrefix = "concept-reservation:"
