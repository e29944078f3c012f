package authority

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/nodes"
)

// Action is a lifecycle transition a holder asks for.
type Action string

const (
	Materialize Action = "materialize"
	Land        Action = "land"
	Tombstone   Action = "tombstone"
	Release     Action = "release"
	Expire      Action = "expire"
)

// TransitionRequest moves a claim the caller holds. The caller proves it
// holds the claim with everything the reservation gave it: tenant, owner,
// reservation id, fingerprint and the fence it last saw.
type TransitionRequest struct {
	ConceptID     string `json:"concept_id"`
	TenantRef     string `json:"tenant_ref"`
	OwnerRef      string `json:"owner_ref"`
	ReservationID string `json:"reservation_id"`
	Fingerprint   string `json:"fingerprint"`
	ExpectedFence uint64 `json:"expected_fence"`
	Action        Action `json:"action"`
}

// TransitionResult is the record after the transition. Replayed is true
// when the same owner retried a transition already committed with the
// fence it holds: the committed record is returned, nothing changes.
type TransitionResult struct {
	Record   *Record `json:"record"`
	Replayed bool    `json:"replayed"`
	// PromotedTo is set when the action ended in another state than its
	// own: a release or an expiry of a claim already visible in a
	// repository (landed) becomes a tombstone, as the spec requires
	// (visibility never decreases; the id is never reused). The caller
	// is told, never left to find out.
	PromotedTo State `json:"promoted_to,omitempty"`
}

// ownState is the state each action leads to when nothing promotes it.
var ownState = map[Action]State{
	Materialize: Materialized, Land: Landed, Tombstone: Tombstoned, Release: Released, Expire: Expired,
}

// result is the answer for action ending in rec.
func result(rec *Record, action Action, replayed bool) *TransitionResult {
	res := &TransitionResult{Record: rec, Replayed: replayed}
	if own, ok := ownState[action]; ok && rec.State != own {
		res.PromotedTo = rec.State
	}
	return res
}

// step is what an action does from one state.
type step struct {
	to         State
	visibility Visibility
	due        bool // the claim's deadline must have passed (expiry)
	notDue     bool // the claim's deadline must not have passed
}

// plan decides the step for action from cur, or why there is none.
// Visibility never decreases; a release or expiry of a claim visible in a
// repository becomes a tombstone.
func plan(cur *Record, action Action) (step, error) {
	visible := cur.Visibility.rank() >= VisibilityRepository.rank()
	tombstone := step{to: Tombstoned, visibility: VisibilityExternal}
	switch {
	case action == Materialize && cur.State == Reserved:
		return step{to: Materialized, visibility: cur.Visibility, notDue: true}, nil
	case action == Land && cur.State == Materialized:
		return step{to: Landed, visibility: maxVisibility(cur.Visibility, VisibilityRepository), notDue: true}, nil
	case (action == Tombstone || action == Release) && cur.State == Landed:
		return tombstone, nil
	case action == Expire && cur.State == Landed:
		// Expiry is accepted only once its deadline has passed, even when
		// it is promoted to a tombstone.
		tombstone.due = true
		return tombstone, nil
	case action == Release && (cur.State == Reserved || cur.State == Materialized):
		if visible {
			return tombstone, nil
		}
		return step{to: Released, visibility: cur.Visibility}, nil
	case action == Expire && (cur.State == Reserved || cur.State == Materialized):
		if visible {
			tombstone.due = true
			return tombstone, nil
		}
		return step{to: Expired, visibility: cur.Visibility, due: true}, nil
	}
	return step{}, errs.Errorf(errs.CodeConflict, "cannot %s a %s claim of %s", action, cur.State, cur.ConceptID)
}

func maxVisibility(a, b Visibility) Visibility {
	if a.rank() >= b.rank() {
		return a
	}
	return b
}

// outcomes are the states an action may end in, for recognizing a retry.
var outcomes = map[Action][]State{
	Materialize: {Materialized}, Land: {Landed}, Tombstone: {Tombstoned},
	Release: {Released, Tombstoned}, Expire: {Expired, Tombstoned},
}

func (req *TransitionRequest) validate() error {
	for _, f := range []struct{ name, v string }{
		{"tenant_ref", req.TenantRef}, {"owner_ref", req.OwnerRef},
		{"reservation_id", req.ReservationID}, {"fingerprint", req.Fingerprint},
	} {
		if err := bounds.Identifier(f.name, f.v); err != nil {
			return err
		}
	}
	if _, ok := outcomes[req.Action]; !ok {
		return errs.Errorf(errs.CodeInvalid, "action must be materialize, land, tombstone, release or expire, not %q", req.Action)
	}
	if req.ExpectedFence < 1 {
		return errs.New(errs.CodeInvalid, "expected_fence must be at least 1")
	}
	return nil
}

// holds reports whether r is the claim the request names.
func (req *TransitionRequest) holds(r *Record) bool {
	return r.TenantRef == req.TenantRef && r.OwnerRef == req.OwnerRef &&
		r.ReservationID == req.ReservationID && r.Fingerprint == req.Fingerprint
}

// committed reports whether r, last written at log index written, is
// this very transition, already applied: the same holder, a write that
// replaced the fence it holds, and a state the action leads to.
func (req *TransitionRequest) committed(r *Record, written uint64) bool {
	if !req.holds(r) || replaced(r, written) != req.ExpectedFence {
		return false
	}
	for _, s := range outcomes[req.Action] {
		if r.State == s {
			return true
		}
	}
	return false
}

// replaced is the fence that r's last write (at log index written)
// replaced. A write of this release records it in prev_fence, and its
// fence is either that write's index or prev_fence+1 (counted). A write
// of an older release counted from the fence before, and recorded
// nothing or left an earlier write's prev_fence in place: its fence
// replaced fence-1. (One case reads wrong: an older release's write at
// the index right after this release's index-fenced one has fence ==
// written, so the prev_fence it left is taken for its own. Only after a
// downgrade, and only the same holder presenting that older fence meets
// it, answered with the record as it is. And a write that is not the
// authority's, an admin's raw CAS of the node that leaves the fence as it
// is, makes the record look like an older release's: a retry is then
// answered stale_fence, which fails closed.)
func replaced(r *Record, written uint64) uint64 {
	if r.PrevFence != 0 && (r.Fence == written || r.Fence == r.PrevFence+1) {
		return r.PrevFence
	}
	return r.Fence - 1
}

// Transition applies req.Action as one CAS conditioned on tenant, owner,
// reservation id, fingerprint, state and expected fence; the next record
// carries a higher fence (see fence.go). An exact retry of the committed
// transition returns the committed record; every other stale call fails
// with errs.StaleFence.
func (s *Service) Transition(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
	p, err := authorize(ctx, identity.RoleMember, req.TenantRef)
	if err != nil {
		return nil, err
	}
	if err := bindOwner(p, &req.OwnerRef); err != nil {
		return nil, err
	}
	id, err := ParseConceptID(req.ConceptID)
	if err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	cur, written, err := s.readWritten(ctx, id, req.TenantRef)
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < maxReclaimAttempts; attempt++ {
		if req.committed(cur, written) {
			return result(cur, req.Action, true), nil
		}
		if !req.holds(cur) || cur.Fence != req.ExpectedFence {
			return nil, errs.Errorf(errs.CodeStaleFence, "%s: the caller does not hold fence %d (the claim is at fence %d)", id, req.ExpectedFence, cur.Fence)
		}
		st, err := plan(cur, req.Action)
		if err != nil {
			return nil, err
		}
		cas := transitionCAS(id, cur, st)
		if cas.IndexFields, err = s.fenceFields(ctx, cas.Updates); err != nil {
			return nil, err
		}
		res, err := s.nodes.CompareAndSet(ctx, cas)
		if err != nil {
			return nil, fromCluster(err)
		}
		next, err := recordOf(&res.Node)
		if err != nil {
			return nil, err
		}
		if res.Swapped {
			return result(next, req.Action, false), nil
		}
		if next.Fence == cur.Fence && next.State == cur.State {
			// Nothing changed, so the deadline condition failed.
			if st.due {
				return nil, errs.Errorf(errs.CodeConflict, "%s has not expired yet (expires at %d)", id, cur.ExpiresAtMs)
			}
			return nil, errs.Errorf(errs.CodeExpired, "%s expired at %d", id, cur.ExpiresAtMs)
		}
		cur, written = next, res.Node.ModifiedIndex
	}
	return nil, failClosed(id.String(), maxReclaimAttempts)
}

// transitionCAS moves cur to st in one CAS, with a counted fence (which
// fenceFields may turn into the entry's index).
func transitionCAS(id ConceptID, cur *Record, st step) nodes.CASRequest {
	req := nodes.CASRequest{
		NodeID: id.NodeID(),
		Conditions: map[string]any{
			"tenant_ref": cur.TenantRef, "owner_ref": cur.OwnerRef,
			"reservation_id": cur.ReservationID, "fingerprint": cur.Fingerprint,
			fieldState: string(cur.State), fieldFence: cur.Fence,
		},
		Updates: map[string]any{
			fieldState: string(st.to), fieldFence: cur.Fence + 1, fieldPrevFence: cur.Fence, fieldVisibility: string(st.visibility),
		},
		TimeFields: nodes.TimeFields{SetNow: map[string]int64{timestampField[st.to]: 0, fieldUpdatedAt: 0}},
	}
	if st.due {
		req.Due = []string{fieldExpiresAt}
	}
	if st.notDue {
		req.NotDue = []string{fieldExpiresAt}
	}
	return req
}
