package linearizability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/seed"
)

// Hand-written histories of the concept protocol. Owners are "alice",
// "bob", ...; a request ref names the owner's attempt; a reservation is
// (owner, request, claim fence).

func cop(client int, call, ret int64, in ConceptInput, out any) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func reserveIn(id, owner, request string) ConceptInput {
	return ConceptInput{Kind: ConceptReserve, ID: id, Owner: owner, Request: request}
}

// transitionIn presents the reservation owner/request that started at
// claim, holding fence expect.
func transitionIn(id, action, owner, request string, claim, expect uint64) ConceptInput {
	return ConceptInput{Kind: ConceptTransition, ID: id, Action: action, Owner: owner, Request: request, Claim: claim, Expect: expect}
}

func getIn(id string) ConceptInput { return ConceptInput{Kind: ConceptGet, ID: id} }

// rec is a full record output; vis follows from the state as the
// authority sets it.
func rec(outcome ConceptOutcome, state string, fence uint64, owner, request string) ConceptOutput {
	vis := VisibilityNone
	switch state {
	case StateLanded:
		vis = VisibilityRepository
	case StateTombstoned:
		vis = VisibilityExternal
	}
	return ConceptOutput{Outcome: outcome, State: state, Fence: fence, Owner: owner, Request: request, Visibility: vis}
}

// held is a reserve's conflict: only the public fields.
func held(state string, fence uint64) ConceptOutput {
	return rec(OutcomeConflict, state, fence, "", "")
}

var (
	staleOut     = ConceptOutput{Outcome: OutcomeStaleFence}
	conflictOut  = ConceptOutput{Outcome: OutcomeConflict}
	notFoundOut  = ConceptOutput{Outcome: OutcomeNotFound}
	conceptUnkwn = UnknownOutput{}
)

func checkConcepts(t *testing.T, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return checkBoth(t, ConceptsModel(), ops)
}

func TestConceptsModelAcceptsLinearizableHistory(t *testing.T) {
	const id, other = "RMDD-1", "RMDD-2"
	ops := []porcupine.Operation{
		// Two overlapping reserves: alice wins, bob conflicts with her
		// public fields; a get overlapping both may see nothing yet.
		cop(0, 0, 10, reserveIn(id, "alice", "a1"), rec(OutcomeCreated, StateReserved, 1, "alice", "a1")),
		cop(1, 2, 12, reserveIn(id, "bob", "b1"), held(StateReserved, 1)),
		cop(2, 1, 3, getIn(id), notFoundOut),
		// Alice's retry of the same request replays her claim.
		cop(0, 13, 14, reserveIn(id, "alice", "a1"), rec(OutcomeReplayed, StateReserved, 1, "alice", "a1")),
		// Alice materializes; her concurrent retry of the same step
		// replays it; bob's presentation of a claim he never held is stale.
		cop(0, 20, 30, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
		cop(3, 21, 31, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeReplayed, StateMaterialized, 2, "alice", "a1")),
		cop(1, 22, 23, transitionIn(id, ActionRelease, "bob", "b1", 1, 1), staleOut),
		// A transition the lifecycle forbids is a conflict and changes
		// nothing; then alice releases.
		cop(0, 40, 41, transitionIn(id, ActionTombstone, "alice", "a1", 1, 2), conflictOut),
		cop(0, 42, 43, transitionIn(id, ActionRelease, "alice", "a1", 1, 2), rec(OutcomeOK, StateReleased, 3, "alice", "a1")),
		// Bob reclaims at the next fence; alice's old claim is now stale
		// even with the fence it last held, and her request conflicts
		// (a replay is only of the record her request made).
		cop(1, 50, 51, reserveIn(id, "bob", "b1"), rec(OutcomeReclaimed, StateReserved, 4, "bob", "b1")),
		cop(0, 52, 53, transitionIn(id, ActionRelease, "alice", "a1", 1, 3), staleOut),
		cop(0, 54, 55, reserveIn(id, "alice", "a1"), held(StateReserved, 4)),
		// Bob lands and then releases: a landed claim becomes a tombstone,
		// which nobody can reclaim.
		cop(1, 60, 61, transitionIn(id, ActionMaterialize, "bob", "b1", 4, 4), rec(OutcomeOK, StateMaterialized, 5, "bob", "b1")),
		cop(1, 62, 63, transitionIn(id, ActionLand, "bob", "b1", 4, 5), rec(OutcomeOK, StateLanded, 6, "bob", "b1")),
		cop(1, 64, 65, transitionIn(id, ActionRelease, "bob", "b1", 4, 6), rec(OutcomeOK, StateTombstoned, 7, "bob", "b1")),
		cop(1, 66, 67, transitionIn(id, ActionRelease, "bob", "b1", 4, 6), rec(OutcomeReplayed, StateTombstoned, 7, "bob", "b1")),
		cop(2, 68, 69, reserveIn(id, "carol", "c1"), held(StateTombstoned, 7)),
		cop(2, 70, 71, getIn(id), rec(OutcomeOK, StateTombstoned, 7, "bob", "b1")),
		// Another id is independent: a transition of nothing finds nothing.
		cop(4, 0, 5, transitionIn(other, ActionMaterialize, "dave", "d1", 1, 1), notFoundOut),
		cop(4, 6, 7, reserveIn(other, "dave", "d1"), rec(OutcomeCreated, StateReserved, 1, "dave", "d1")),
		// Expiry before the deadline (the model's TTL never ends) conflicts,
		// also for a landed claim.
		cop(4, 8, 9, transitionIn(other, ActionExpire, "dave", "d1", 1, 1), conflictOut),
		cop(4, 10, 11, getIn(other), rec(OutcomeOK, StateReserved, 1, "dave", "d1")),
		cop(4, 12, 13, transitionIn(other, ActionMaterialize, "dave", "d1", 1, 1), rec(OutcomeOK, StateMaterialized, 2, "dave", "d1")),
		cop(4, 14, 15, transitionIn(other, ActionLand, "dave", "d1", 1, 2), rec(OutcomeOK, StateLanded, 3, "dave", "d1")),
		cop(4, 16, 17, transitionIn(other, ActionExpire, "dave", "d1", 1, 3), conflictOut),
		cop(4, 18, 19, getIn(other), rec(OutcomeOK, StateLanded, 3, "dave", "d1")),
	}
	if res := checkConcepts(t, ops); res != porcupine.Ok {
		t.Fatalf("linearizable history: got %s, want Ok", res)
	}
}

func TestConceptsModelRejectsNonLinearizableHistories(t *testing.T) {
	const id = "RMDD-1"
	created := func(owner, request string) ConceptOutput {
		return rec(OutcomeCreated, StateReserved, 1, owner, request)
	}
	cases := []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"two creates for one id", []porcupine.Operation{
			cop(0, 0, 10, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 1, 11, reserveIn(id, "bob", "b1"), created("bob", "b1")),
		}},
		{"a second create after the first returned", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 2, 3, reserveIn(id, "bob", "b1"), created("bob", "b1")),
		}},
		{"a replay for a request that never reserved", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 2, 3, reserveIn(id, "bob", "b1"), rec(OutcomeReplayed, StateReserved, 1, "bob", "b1")),
		}},
		{"a stale_fence answer when the fence was current", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), staleOut),
		}},
		{"a get returning a state no transition produced", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 2, 3, getIn(id), rec(OutcomeOK, StateLanded, 2, "alice", "a1")),
		}},
		{"a get of a release nobody asked for", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 2, 3, getIn(id), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
		}},
		{"a lost transition", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
			cop(1, 4, 5, getIn(id), rec(OutcomeOK, StateReserved, 1, "alice", "a1")),
		}},
		{"a transition acknowledged twice from one fence", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 10, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
			cop(1, 3, 11, transitionIn(id, ActionRelease, "alice", "a1", 1, 1), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
		}},
		{"a stale holder that mutates", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionRelease, "alice", "a1", 1, 1), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
			cop(1, 4, 5, reserveIn(id, "bob", "b1"), rec(OutcomeReclaimed, StateReserved, 3, "bob", "b1")),
			cop(0, 6, 7, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 3), rec(OutcomeOK, StateMaterialized, 4, "alice", "a1")),
		}},
		{"a replay answer for a transition never committed", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 0), rec(OutcomeReplayed, StateReserved, 1, "alice", "a1")),
		}},
		{"a reclaim of a landed claim", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
			cop(0, 4, 5, transitionIn(id, ActionLand, "alice", "a1", 1, 2), rec(OutcomeOK, StateLanded, 3, "alice", "a1")),
			cop(1, 6, 7, reserveIn(id, "bob", "b1"), rec(OutcomeReclaimed, StateReserved, 4, "bob", "b1")),
		}},
		{"a release after landing that is not a tombstone", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
			cop(0, 4, 5, transitionIn(id, ActionLand, "alice", "a1", 1, 2), rec(OutcomeOK, StateLanded, 3, "alice", "a1")),
			cop(0, 6, 7, transitionIn(id, ActionRelease, "alice", "a1", 1, 3), rec(OutcomeOK, StateReleased, 4, "alice", "a1")),
		}},
		{"an expiry before the deadline that tombstones a landed claim", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
			cop(0, 4, 5, transitionIn(id, ActionLand, "alice", "a1", 1, 2), rec(OutcomeOK, StateLanded, 3, "alice", "a1")),
			cop(0, 6, 7, transitionIn(id, ActionExpire, "alice", "a1", 1, 3), rec(OutcomeOK, StateTombstoned, 4, "alice", "a1")),
		}},
		{"a conflict reporting another fence", []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 2, 3, reserveIn(id, "bob", "b1"), held(StateReserved, 2)),
		}},
		{"a violation on one id next to a clean id", []porcupine.Operation{
			cop(3, 0, 1, reserveIn("RMDD-2", "carol", "c1"), created("carol", "c1")),
			cop(3, 2, 3, getIn("RMDD-2"), rec(OutcomeOK, StateReserved, 1, "carol", "c1")),
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 2, 3, getIn(id), notFoundOut),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkConcepts(t, tc.ops); res != porcupine.Illegal {
				t.Fatalf("got %s, want Illegal", res)
			}
		})
	}
}

func TestConceptsModelUnknownOutcomes(t *testing.T) {
	const id = "RMDD-1"
	created := func(owner, request string) ConceptOutput {
		return rec(OutcomeCreated, StateReserved, 1, owner, request)
	}
	cases := []struct {
		name string
		want porcupine.CheckResult
		ops  []porcupine.Operation
	}{
		{"unknown reserve that applied", porcupine.Ok, []porcupine.Operation{
			cop(0, 0, Pending, reserveIn(id, "alice", "a1"), conceptUnkwn),
			cop(1, 10, 20, getIn(id), rec(OutcomeOK, StateReserved, 1, "alice", "a1")),
			cop(1, 30, 40, reserveIn(id, "bob", "b1"), held(StateReserved, 1)),
			// The retry of the same request replays the claim.
			cop(0, 50, 60, reserveIn(id, "alice", "a1"), rec(OutcomeReplayed, StateReserved, 1, "alice", "a1")),
		}},
		{"unknown reserve that did not apply", porcupine.Ok, []porcupine.Operation{
			cop(0, 0, Pending, reserveIn(id, "alice", "a1"), conceptUnkwn),
			cop(1, 10, 20, getIn(id), notFoundOut),
			cop(1, 30, 40, reserveIn(id, "bob", "b1"), created("bob", "b1")),
			cop(1, 50, 60, getIn(id), rec(OutcomeOK, StateReserved, 1, "bob", "b1")),
		}},
		{"unknown reclaim that applied late", porcupine.Ok, []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, 3, transitionIn(id, ActionRelease, "alice", "a1", 1, 1), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
			cop(1, 4, Pending, reserveIn(id, "bob", "b1"), conceptUnkwn),
			cop(2, 10, 11, getIn(id), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
			cop(2, 20, 21, getIn(id), rec(OutcomeOK, StateReserved, 3, "bob", "b1")),
		}},
		{"unknown transition that applied", porcupine.Ok, []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, Pending, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), conceptUnkwn),
			// The retry with the same fence finds it committed.
			cop(3, 10, 11, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), rec(OutcomeReplayed, StateMaterialized, 2, "alice", "a1")),
			cop(2, 12, 13, getIn(id), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
		}},
		{"unknown transition that did not apply", porcupine.Ok, []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, Pending, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), conceptUnkwn),
			cop(3, 10, 11, transitionIn(id, ActionRelease, "alice", "a1", 1, 1), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
			cop(2, 12, 13, getIn(id), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
		}},
		{"unknown reserve cannot explain another owner", porcupine.Illegal, []porcupine.Operation{
			cop(0, 0, Pending, reserveIn(id, "alice", "a1"), conceptUnkwn),
			cop(1, 10, 20, getIn(id), rec(OutcomeOK, StateReserved, 1, "mallory", "m1")),
		}},
		{"unknown reserve cannot act before its call", porcupine.Illegal, []porcupine.Operation{
			cop(1, 0, 5, getIn(id), rec(OutcomeOK, StateReserved, 1, "alice", "a1")),
			cop(0, 10, Pending, reserveIn(id, "alice", "a1"), conceptUnkwn),
		}},
		{"unknown transition cannot apply twice", porcupine.Illegal, []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(0, 2, Pending, transitionIn(id, ActionMaterialize, "alice", "a1", 1, 1), conceptUnkwn),
			cop(2, 10, 11, getIn(id), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
			cop(2, 12, 13, transitionIn(id, ActionRelease, "alice", "a1", 1, 2), rec(OutcomeOK, StateReleased, 3, "alice", "a1")),
			cop(2, 14, 15, getIn(id), rec(OutcomeOK, StateMaterialized, 2, "alice", "a1")),
		}},
		{"unknown stale transition cannot mutate", porcupine.Illegal, []porcupine.Operation{
			cop(0, 0, 1, reserveIn(id, "alice", "a1"), created("alice", "a1")),
			cop(1, 2, Pending, transitionIn(id, ActionRelease, "bob", "b1", 1, 1), conceptUnkwn),
			cop(2, 10, 11, getIn(id), rec(OutcomeOK, StateReleased, 2, "alice", "a1")),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkConcepts(t, tc.ops); res != tc.want {
				t.Fatalf("got %s, want %s", res, tc.want)
			}
		})
	}
}

func TestConceptsModelDescriptions(t *testing.T) {
	m := ConceptsModel()
	for _, tc := range []struct {
		in   ConceptInput
		out  any
		want string
	}{
		{reserveIn("RMDD-1", "alice", "a1"), rec(OutcomeCreated, StateReserved, 1, "alice", "a1"), "reserve(RMDD-1, alice/a1) -> created {reserved fence 1, alice/a1, none}"},
		{reserveIn("RMDD-1", "bob", "b1"), held(StateLanded, 3), "reserve(RMDD-1, bob/b1) -> conflict {landed fence 3, repository}"},
		{transitionIn("RMDD-1", ActionLand, "alice", "a1", 1, 2), staleOut, "land(RMDD-1, alice/a1@1, fence 2) -> stale_fence"},
		{transitionIn("RMDD-1", ActionRelease, "alice", "a1", 1, 2), conceptUnkwn, "release(RMDD-1, alice/a1@1, fence 2) -> ? (outcome unknown)"},
		{getIn("RMDD-1"), notFoundOut, "get(RMDD-1) -> not_found"},
	} {
		if got := m.DescribeOperation(tc.in, tc.out); got != tc.want {
			t.Errorf("DescribeOperation = %q, want %q", got, tc.want)
		}
	}
	if got := m.DescribeState(m.Init()); got != "absent" {
		t.Errorf("DescribeState(init) = %q", got)
	}
	s, _, _ := stepConcept(conceptState{}, reserveIn("RMDD-1", "alice", "a1"))
	if got := m.DescribeState(s); got != "{reserved fence 1, alice/a1@1, none}" {
		t.Errorf("DescribeState(reserved) = %q", got)
	}
}

// The model against the implementation, one call at a time: random
// reserves, transitions (current, stale, replayed and forbidden) and gets
// on the in-process fixture must each give exactly the output the model
// predicts. A porcupine failure on a real history then points at
// concurrency, replication or failover, not at a model that disagrees
// with the protocol.
func TestConceptsModelAgreesWithFixture(t *testing.T) {
	ps, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{{Namespace: "LIN", Min: 1, Max: 999, PolicyVersion: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := authority.NewFixture(ps)
	if err != nil {
		t.Fatal(err)
	}
	const steps = 2000
	seed := seed.For(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	type reservation struct {
		owner, request, id string
		claim, fence, prev uint64 // the fixture's fences: current, and the one it replaced
		rsvID, fp          string
	}
	states := map[string]conceptState{}
	var known []reservation // every reservation seen, in order
	byID := map[string]int{}
	trail := map[string][]string{} // per id, for the failure message
	actions := []string{ActionMaterialize, ActionLand, ActionTombstone, ActionRelease, ActionExpire}
	outcomes := map[string]int{}
	// The fixture's fences are log indexes; the model names them by order
	// of issue on the id (as the chaos workload's history rewrite does).
	// A fence first seen on a write is the id's next; one never issued
	// on the id maps to a value no model fence has.
	issuedOrder := map[string]map[uint64]uint64{}
	ordinal := func(id string, fence uint64, issued bool) uint64 {
		if fence == 0 {
			return 0
		}
		m := issuedOrder[id]
		if m == nil {
			m = map[uint64]uint64{}
			issuedOrder[id] = m
		}
		if o, ok := m[fence]; ok {
			return o
		}
		if issued {
			m[fence] = uint64(len(m) + 1)
			return m[fence]
		}
		return 1<<40 + fence
	}
	var expectReal uint64 // the fence a transition presents to the fixture
	for step := 0; step < steps; step++ {
		var live []string
		for n := 1; len(live) < 3; n++ {
			id := fmt.Sprintf("LIN-%d", n)
			if states[id].State != StateTombstoned {
				live = append(live, id)
			}
		}
		id := live[rng.IntN(len(live))]
		var mine []int
		for i, k := range known {
			if k.id == id {
				mine = append(mine, i)
			}
		}
		var in ConceptInput
		var k reservation
		switch p := rng.IntN(10); {
		case p < 5 && len(mine) > 0:
			k = known[mine[rng.IntN(len(mine))]]
			if rng.IntN(3) == 0 {
				k = known[mine[len(mine)-1]] // the latest claim, more often
			}
			expectReal = k.fence
			switch rng.IntN(6) {
			case 0:
				// The fence before: a retry of the last step, or stale.
				expectReal = max(k.prev, 1)
			case 1:
				expectReal++
			}
			in = transitionIn(id, actions[rng.IntN(len(actions))], k.owner, k.request, k.claim, ordinal(id, expectReal, false))
		case p < 8:
			owner := []string{"alice", "bob", "carol"}[rng.IntN(3)]
			in = reserveIn(id, owner, fmt.Sprintf("%s-%d", owner, rng.IntN(2)))
		default:
			in = getIn(id)
		}
		next, want, ok := stepConcept(states[id], in)
		if !ok {
			t.Fatalf("model refused %+v", in)
		}
		var got ConceptOutput
		var rec *authority.Record
		switch in.Kind {
		case ConceptReserve:
			res, err := f.Reserve(ctx, authority.ReserveRequest{ConceptID: id, TenantRef: "t", OwnerRef: in.Owner, RequestRef: in.Request,
				PurposeDigest: "sha256:p", TTLMs: time.Hour.Milliseconds()})
			var e *errs.Error
			switch {
			case err == nil:
				rec = res.Record
				got = fixtureOutput(reserveOutcome(res), rec)
			case errors.As(err, &e) && e.Code == errs.CodeConflict:
				fence, _ := e.Detail["fence"].(uint64)
				state, _ := e.Detail["state"].(string)
				vis, _ := e.Detail["visibility"].(string)
				got = ConceptOutput{Outcome: OutcomeConflict, State: state, Fence: fence, Visibility: vis}
			default:
				t.Fatalf("step %d: %s: %v", step, describeConceptInput(in), err)
			}
		case ConceptTransition:
			res, err := f.Transition(ctx, authority.TransitionRequest{ConceptID: id, TenantRef: "t", OwnerRef: k.owner,
				ReservationID: k.rsvID, Fingerprint: k.fp, ExpectedFence: expectReal, Action: authority.Action(in.Action)})
			switch {
			case err == nil && res.Replayed:
				rec, got = res.Record, fixtureOutput(OutcomeReplayed, res.Record)
			case err == nil:
				rec, got = res.Record, fixtureOutput(OutcomeOK, res.Record)
			default:
				got = ConceptOutput{Outcome: ConceptOutcome(errs.CodeOf(err))}
			}
		case ConceptGet:
			r, err := f.Get(ctx, id, "t")
			switch {
			case err == nil:
				rec, got = r, fixtureOutput(OutcomeOK, r)
			default:
				got = ConceptOutput{Outcome: ConceptOutcome(errs.CodeOf(err))}
			}
		}
		wrote := got.Outcome == OutcomeCreated || got.Outcome == OutcomeReclaimed || in.Kind == ConceptTransition && got.Outcome == OutcomeOK
		got.Fence = ordinal(id, got.Fence, wrote)
		trail[id] = append(trail[id], describeConceptInput(in)+" -> "+describeConceptOutput(got))
		if got != want {
			last := trail[id][max(0, len(trail[id])-12):]
			t.Fatalf("step %d (seed %d) on %s, from %s: the fixture answered %s, the model %s; the id's last calls:\n%s",
				step, seed, id, ConceptsModel().DescribeState(states[id]), describeConceptOutput(got), describeConceptOutput(want), strings.Join(last, "\n"))
		}
		outcomes[fmt.Sprintf("%v/%s", in.Kind, got.Outcome)]++
		states[id] = next
		if rec != nil && next.Exists {
			r := reservation{owner: next.Owner, request: next.Request, id: id, claim: next.Claim, fence: rec.Fence, prev: rec.PrevFence, rsvID: rec.ReservationID, fp: rec.Fingerprint}
			if i, seen := byID[rec.ReservationID]; seen {
				known[i].fence, known[i].prev = rec.Fence, rec.PrevFence
			} else {
				byID[rec.ReservationID] = len(known)
				known = append(known, r)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	for _, o := range []string{"reserve/created", "reserve/reclaimed", "reserve/replayed", "reserve/conflict", "transition/ok",
		"transition/replayed", "transition/stale_fence", "transition/conflict", "get/ok"} {
		if outcomes[o] == 0 {
			t.Errorf("no %s in %d steps: the comparison missed a case", o, steps)
		}
	}
}

// reserveOutcome names which of created, reclaimed and replayed is set
// (all of them, joined, if the result breaks its exactly-one rule).
func reserveOutcome(res *authority.ReserveResult) ConceptOutcome {
	var out ConceptOutcome
	for _, c := range []struct {
		set bool
		o   ConceptOutcome
	}{{res.Created, OutcomeCreated}, {res.Reclaimed, OutcomeReclaimed}, {res.Replayed, OutcomeReplayed}} {
		if c.set {
			out += c.o
		}
	}
	return out
}

func fixtureOutput(outcome ConceptOutcome, r *authority.Record) ConceptOutput {
	return ConceptOutput{Outcome: outcome, State: string(r.State), Fence: r.Fence, Owner: r.OwnerRef, Request: r.RequestRef, Visibility: string(r.Visibility)}
}
