package linearizability

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// ConceptKind names an operation of the concept reservation protocol.
type ConceptKind uint8

// The concept operations the model knows.
const (
	// ConceptReserve is Reserve of an id by (Owner, Request).
	ConceptReserve ConceptKind = iota + 1
	// ConceptTransition is Transition of the reservation (Owner, Request,
	// Claim) with Action, conditioned on Expect.
	ConceptTransition
	// ConceptGet is a linearizable Get.
	ConceptGet
)

func (k ConceptKind) String() string {
	switch k {
	case ConceptReserve:
		return "reserve"
	case ConceptTransition:
		return "transition"
	case ConceptGet:
		return "get"
	}
	return fmt.Sprintf("ConceptKind(%d)", uint8(k))
}

// Lifecycle states, visibilities and actions, spelled as the authority
// stores them. The model keeps its own copy: it is a specification, not a
// reuse of the code it checks.
const (
	StateReserved     = "reserved"
	StateMaterialized = "materialized"
	StateLanded       = "landed"
	StateTombstoned   = "tombstoned"
	StateReleased     = "released"
	StateExpired      = "expired"

	VisibilityNone       = "none"
	VisibilityRepository = "repository"
	VisibilityExternal   = "external"

	ActionMaterialize = "materialize"
	ActionLand        = "land"
	ActionTombstone   = "tombstone"
	ActionRelease     = "release"
	ActionExpire      = "expire"
)

// ConceptOutcome is the class of a decided result.
type ConceptOutcome string

// The outcome classes. A reserve ends created, reclaimed, replayed or
// conflict; a transition ok, replayed, stale_fence, conflict, expired or
// not_found; a get ok or not_found.
const (
	OutcomeCreated    ConceptOutcome = "created"
	OutcomeReclaimed  ConceptOutcome = "reclaimed"
	OutcomeReplayed   ConceptOutcome = "replayed"
	OutcomeConflict   ConceptOutcome = "conflict"
	OutcomeStaleFence ConceptOutcome = "stale_fence"
	OutcomeExpired    ConceptOutcome = "expired"
	OutcomeNotFound   ConceptOutcome = "not_found"
	OutcomeOK         ConceptOutcome = "ok"
)

// ConceptInput is what a client sent. Every other field of a request
// (tenant, repository, purpose, provenance, TTL) is assumed the same for
// every call of a history, so a reservation's fingerprint is determined by
// its owner and request ref, and its reservation id by those and the fence
// it started at (Claim). The TTL is assumed long enough that nothing
// expires during the history: the model does not know FSM time.
type ConceptInput struct {
	Kind ConceptKind
	ID   string // concept id; the model is partitioned by it
	// Owner and Request are the owner ref and request ref of a reserve,
	// and those of the reservation a transition presents.
	Owner   string
	Request string
	// Claim is the fence the presented reservation started at: with
	// Owner and Request it stands for the reservation id and fingerprint
	// a transition carries (transition only).
	Claim uint64
	// Expect is the fence the caller holds (transition only).
	Expect uint64
	// Action is the lifecycle action (transition only).
	Action string
}

// ConceptOutput is a decided result: its class and the record it
// reported. Which record fields are set depends on the class:
//
//   - created, reclaimed, replayed and ok: State, Fence, Owner, Request
//     and Visibility of the record returned;
//   - a reserve's conflict: State, Fence and Visibility, the public fields
//     of the winner that travel in the error (no owner, no request);
//   - stale_fence, expired, not_found and a transition's conflict: none.
type ConceptOutput struct {
	Outcome    ConceptOutcome
	State      string
	Fence      uint64
	Owner      string
	Request    string
	Visibility string
}

// conceptState is the model's state of one concept id. It is comparable,
// so porcupine's default == is its equality.
type conceptState struct {
	Exists     bool
	State      string
	Fence      uint64
	Owner      string
	Request    string
	Claim      uint64 // fence the current reservation started at
	Visibility string
}

// record is the full output that reports s.
func (s conceptState) record(outcome ConceptOutcome) ConceptOutput {
	return ConceptOutput{Outcome: outcome, State: s.State, Fence: s.Fence, Owner: s.Owner, Request: s.Request, Visibility: s.Visibility}
}

// public is a reserve's conflict, which carries only the public fields.
func (s conceptState) public() ConceptOutput {
	return ConceptOutput{Outcome: OutcomeConflict, State: s.State, Fence: s.Fence, Visibility: s.Visibility}
}

func visible(v string) bool { return v == VisibilityRepository || v == VisibilityExternal }

// conceptOutcomes are the states an action may end in; a retry that finds
// the holder one fence further in one of them is a replay.
var conceptOutcomes = map[string][]string{
	ActionMaterialize: {StateMaterialized},
	ActionLand:        {StateLanded},
	ActionTombstone:   {StateTombstoned},
	ActionRelease:     {StateReleased, StateTombstoned},
	ActionExpire:      {StateExpired, StateTombstoned},
}

// conceptStep is where an action leads from a state and the visibility it
// leaves; ok is false when the lifecycle forbids it (a conflict). An
// expiry is accepted only once the claim's deadline has passed, whatever
// the state (after repository visibility it would become a tombstone);
// under the model's long TTL no deadline ever passes, so every expiry is a
// conflict.
func conceptStep(state, visibility, action string) (to, vis string, ok bool) {
	early := state == StateReserved || state == StateMaterialized
	switch {
	case action == ActionExpire:
		return "", "", false
	case action == ActionMaterialize && state == StateReserved:
		return StateMaterialized, visibility, true
	case action == ActionLand && state == StateMaterialized:
		if visible(visibility) {
			return StateLanded, visibility, true
		}
		return StateLanded, VisibilityRepository, true
	case (action == ActionTombstone || action == ActionRelease) && state == StateLanded,
		action == ActionRelease && early && visible(visibility):
		return StateTombstoned, VisibilityExternal, true
	case action == ActionRelease && early:
		return StateReleased, visibility, true
	}
	return "", "", false
}

// stepConcept is the sequential specification: the state after in and the
// only output a correct implementation can return.
func stepConcept(s conceptState, in ConceptInput) (conceptState, ConceptOutput, bool) {
	switch in.Kind {
	case ConceptReserve:
		switch {
		case !s.Exists:
			next := conceptState{Exists: true, State: StateReserved, Fence: 1, Owner: in.Owner, Request: in.Request, Claim: 1, Visibility: VisibilityNone}
			return next, next.record(OutcomeCreated), true
		case s.Owner == in.Owner && s.Request == in.Request:
			return s, s.record(OutcomeReplayed), true
		case (s.State == StateReleased || s.State == StateExpired) && !visible(s.Visibility):
			f := s.Fence + 1
			next := conceptState{Exists: true, State: StateReserved, Fence: f, Owner: in.Owner, Request: in.Request, Claim: f, Visibility: VisibilityNone}
			return next, next.record(OutcomeReclaimed), true
		}
		return s, s.public(), true
	case ConceptTransition:
		if _, known := conceptOutcomes[in.Action]; !known {
			return s, ConceptOutput{}, false
		}
		if !s.Exists {
			return s, ConceptOutput{Outcome: OutcomeNotFound}, true
		}
		holds := s.Owner == in.Owner && s.Request == in.Request && s.Claim == in.Claim
		if holds && s.Fence == in.Expect+1 && slices.Contains(conceptOutcomes[in.Action], s.State) {
			return s, s.record(OutcomeReplayed), true
		}
		if !holds || s.Fence != in.Expect {
			return s, ConceptOutput{Outcome: OutcomeStaleFence}, true
		}
		to, vis, ok := conceptStep(s.State, s.Visibility, in.Action)
		if !ok {
			return s, ConceptOutput{Outcome: OutcomeConflict}, true
		}
		next := s
		next.State, next.Visibility, next.Fence = to, vis, s.Fence+1
		return next, next.record(OutcomeOK), true
	case ConceptGet:
		if !s.Exists {
			return s, ConceptOutput{Outcome: OutcomeNotFound}, true
		}
		return s, s.record(OutcomeOK), true
	}
	return s, ConceptOutput{}, false
}

// ConceptsModel is the porcupine model of the concept reservation
// protocol's Reserve, Transition and Get, partitioned by concept id. A
// decided output must equal the specification's exactly; an UnknownOutput
// is accepted and steps as if the call was applied. Expiry is outside the
// model: histories must use a TTL that no call outlives.
func ConceptsModel() porcupine.Model {
	part, partEvents := PartitionBy(func(in any) string { return in.(ConceptInput).ID })
	return porcupine.Model{
		Partition:      part,
		PartitionEvent: partEvents,
		Init:           func() any { return conceptState{} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(conceptState)
			next, want, ok := stepConcept(s, input.(ConceptInput))
			if !ok {
				return false, s
			}
			if IsUnknown(output) {
				return true, next
			}
			got, isConcept := output.(ConceptOutput)
			return isConcept && got == want, next
		},
		DescribeOperation: func(input, output any) string {
			return describeConceptInput(input.(ConceptInput)) + " -> " + describeConceptOutput(output)
		},
		DescribeState: func(state any) string {
			s := state.(conceptState)
			if !s.Exists {
				return "absent"
			}
			return fmt.Sprintf("{%s fence %d, %s/%s@%d, %s}", s.State, s.Fence, s.Owner, s.Request, s.Claim, s.Visibility)
		},
	}
}

func describeConceptInput(in ConceptInput) string {
	switch in.Kind {
	case ConceptReserve:
		return fmt.Sprintf("reserve(%s, %s/%s)", in.ID, in.Owner, in.Request)
	case ConceptTransition:
		return fmt.Sprintf("%s(%s, %s/%s@%d, fence %d)", in.Action, in.ID, in.Owner, in.Request, in.Claim, in.Expect)
	case ConceptGet:
		return fmt.Sprintf("get(%s)", in.ID)
	}
	return fmt.Sprintf("%v(%s)", in.Kind, in.ID)
}

func describeConceptOutput(output any) string {
	if IsUnknown(output) {
		return "? (outcome unknown)"
	}
	o, ok := output.(ConceptOutput)
	if !ok {
		return fmt.Sprintf("%#v", output)
	}
	switch {
	case o.State == "":
		return string(o.Outcome)
	case o.Owner == "" && o.Request == "":
		return fmt.Sprintf("%s {%s fence %d, %s}", o.Outcome, o.State, o.Fence, o.Visibility)
	}
	return fmt.Sprintf("%s {%s fence %d, %s/%s, %s}", o.Outcome, o.State, o.Fence, o.Owner, o.Request, o.Visibility)
}
