package authority

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/fsm/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
)

// FixtureConceptReservationAuthority runs the reservation protocol on an
// in-process state machine, for deterministic unit tests of callers. It is
// safe for concurrent use inside one process and gives no guarantee across
// processes or hosts: Authoritative reports false, and it must never stand
// in for the cluster.
type FixtureConceptReservationAuthority struct {
	local *fsmtest.Local
	svc   *Service
}

var _ Authority = (*FixtureConceptReservationAuthority)(nil)

// NewFixture returns a fixture whose clock starts at fsmtest.Epoch and
// moves only with Advance. policies become its replicated policy set
// (nil: none, every reserve refused until SetPolicies).
func NewFixture(policies *PolicySet) (*FixtureConceptReservationAuthority, error) {
	local, err := fsmtest.New(nodes.Module(), Module())
	if err != nil {
		return nil, err
	}
	// Enable what this binary serves, as a cluster's leader does, so that
	// the fixture fences as a cluster does: by log index. A caller tested
	// against counted fences could come to rely on fence+1.
	if err := local.Enable(fsm.ServedBy(nodes.Module(), Module())); err != nil {
		return nil, err
	}
	f := &FixtureConceptReservationAuthority{local: local, svc: NewService(local, local, nil)}
	if policies != nil {
		if _, err := f.svc.Seed(context.Background(), policies); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Policies reads the fixture's policy set.
func (f *FixtureConceptReservationAuthority) Policies(ctx context.Context) (*PoliciesResult, error) {
	return f.svc.Policies(ctx, fsm.Linearizable)
}

// Seed proposes ps as the fixture's policy set, as a node does with its
// --concept-policies at start: it applies only if the fixture has no set
// or ps is newer.
func (f *FixtureConceptReservationAuthority) Seed(ctx context.Context, ps *PolicySet) (*PoliciesResult, error) {
	return f.svc.Seed(ctx, ps)
}

// SetPolicies replaces the fixture's policy set, as an admin does.
func (f *FixtureConceptReservationAuthority) SetPolicies(ctx context.Context, req PoliciesRequest) (*PoliciesResult, error) {
	return f.svc.SetPolicies(ctx, req)
}

// Advance moves the fixture's clock forward (expiry follows it).
func (f *FixtureConceptReservationAuthority) Advance(d time.Duration) { f.local.Advance(d) }

// Authoritative reports false: a fixture decides nothing across processes.
func (f *FixtureConceptReservationAuthority) Authoritative() bool { return false }

func (f *FixtureConceptReservationAuthority) Reserve(ctx context.Context, req ReserveRequest) (*ReserveResult, error) {
	return f.svc.Reserve(ctx, req)
}

func (f *FixtureConceptReservationAuthority) ReserveNextNumeric(ctx context.Context, req ReserveNextRequest) (*ReserveResult, error) {
	return reserveNext(ctx, f, req)
}

func (f *FixtureConceptReservationAuthority) Transition(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
	return f.svc.Transition(ctx, req)
}

func (f *FixtureConceptReservationAuthority) Get(ctx context.Context, conceptID, tenantRef string) (*Record, error) {
	return f.svc.Get(ctx, conceptID, tenantRef)
}

func (f *FixtureConceptReservationAuthority) List(ctx context.Context, req ListRequest) (*RecordPage, error) {
	return f.svc.List(ctx, req)
}
