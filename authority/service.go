package authority

import (
	"context"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// Authority is what callers of the reservation protocol use; Service (the
// native adapter) and FixtureConceptReservationAuthority implement it.
type Authority interface {
	Reserve(ctx context.Context, req ReserveRequest) (*ReserveResult, error)
	ReserveNextNumeric(ctx context.Context, req ReserveNextRequest) (*ReserveResult, error)
	Transition(ctx context.Context, req TransitionRequest) (*TransitionResult, error)
	Get(ctx context.Context, conceptID, tenantRef string) (*Record, error)
	List(ctx context.Context, req ListRequest) (*RecordPage, error)
	// Authoritative is true only for an adapter backed by the replicated
	// graph; a fixture gives no cross-process guarantee.
	Authoritative() bool
}

// Service is the native adapter: the reservation protocol over the node
// primitives of any Proposer and Reader (an embedded cluster.Node, a
// domain.Conn, or a bare FSM).
type Service struct {
	nodes *nodes.Client
	p     fsm.Proposer
	r     fsm.Reader
	// seed is the policy set this service was given (a node's
	// --concept-policies). Where the cluster enables the authority's
	// module, it only seeds the replicated set when the cluster has none
	// (see policyset.go); ids are validated against the replicated set.
	// Where it does not (a cluster part-way through a rolling upgrade,
	// a bare FSM of the node primitives alone), the service validates
	// against seed itself, as releases before the replicated set did.
	seed *PolicySet
}

var _ Authority = (*Service)(nil)

// NewService returns the native adapter. policies seeds the cluster's
// replicated policy set if it has none yet (nil: no seed).
func NewService(p fsm.Proposer, r fsm.Reader, policies *PolicySet) *Service {
	return &Service{nodes: nodes.NewClient(p, r), p: p, r: r, seed: policies}
}

// Require fails with unavailable, naming what is missing, unless the
// cluster behind the service enables the node primitives it uses.
func (s *Service) Require(ctx context.Context) error { return s.nodes.Require(ctx) }

// Authoritative reports true: decisions come from the replicated log.
func (s *Service) Authoritative() bool { return true }

// Bounds of a reservation request.
const (
	DefaultTTL         = 24 * time.Hour
	MaxTTL             = 30 * 24 * time.Hour
	MinTTL             = time.Second
	MaxProvenanceRefs  = 64
	maxReclaimAttempts = 8
)

// ReserveRequest asks for one complete concept id.
type ReserveRequest struct {
	ConceptID      string   `json:"concept_id"`
	TenantRef      string   `json:"tenant_ref"`
	RepositoryRef  string   `json:"repository_ref,omitempty"`
	LaneRef        string   `json:"lane_ref,omitempty"`
	OwnerRef       string   `json:"owner_ref"`
	RequestRef     string   `json:"request_ref"`
	DesignRef      string   `json:"design_ref,omitempty"`
	ProvenanceRefs []string `json:"provenance_refs,omitempty"`
	PurposeDigest  string   `json:"purpose_digest"`
	// TTLMs is how long the reservation lasts before it may expire,
	// counted in FSM time from the moment it is decided (0: DefaultTTL).
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// RangeMin and RangeMax are accepted from callers that still send
	// them and are replaced by the selected policy's range: they are not
	// authority policy.
	RangeMin *uint64 `json:"range_min,omitempty"`
	RangeMax *uint64 `json:"range_max,omitempty"`
}

// ReserveResult is the claim a reserve call obtained or found. Exactly one
// of Created, Reclaimed and Replayed is true. A replay returns the same
// request's claim in whatever state it is now (it may since have been
// released or expired): the request's outcome, not a fresh claim.
type ReserveResult struct {
	Record *Record `json:"record"`
	// Created: this call made the first claim of the id.
	Created bool `json:"created"`
	// Reclaimed: this call took over a released or expired claim that had
	// never been visible in a repository.
	Reclaimed bool `json:"reclaimed"`
	// Replayed: the same request (request ref and fingerprint) had already
	// claimed the id; this is its record.
	Replayed bool `json:"replayed"`
}

func (req *ReserveRequest) validate() error {
	for _, f := range []struct{ name, v string }{
		{"tenant_ref", req.TenantRef}, {"owner_ref", req.OwnerRef},
		{"request_ref", req.RequestRef}, {"purpose_digest", req.PurposeDigest},
	} {
		if err := bounds.Identifier(f.name, f.v); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{
		{"repository_ref", req.RepositoryRef}, {"lane_ref", req.LaneRef}, {"design_ref", req.DesignRef},
	} {
		if err := bounds.OptionalIdentifier(f.name, f.v); err != nil {
			return err
		}
	}
	if len(req.ProvenanceRefs) > MaxProvenanceRefs {
		return errs.Errorf(errs.CodeInvalid, "%d provenance refs, more than %d", len(req.ProvenanceRefs), MaxProvenanceRefs)
	}
	for _, p := range req.ProvenanceRefs {
		if err := bounds.Identifier("provenance ref", p); err != nil {
			return err
		}
	}
	if req.TTLMs == 0 {
		req.TTLMs = DefaultTTL.Milliseconds()
	}
	if req.TTLMs < MinTTL.Milliseconds() || req.TTLMs > MaxTTL.Milliseconds() {
		return errs.Errorf(errs.CodeInvalid, "ttl_ms must be between %d and %d", MinTTL.Milliseconds(), MaxTTL.Milliseconds())
	}
	return nil
}

// Reserve claims req.ConceptID, following the spec's algorithm: bind the
// policy, create the node once, and on a failed create classify the
// stored claim as a replay, a reclaimable claim or a conflict. A conflict
// is an errs.Conflict whose Detail holds the winner's public fields.
func (s *Service) Reserve(ctx context.Context, req ReserveRequest) (*ReserveResult, error) {
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
	m, err := s.mode(ctx)
	if err != nil {
		return nil, err
	}
	pol, err := s.localPolicy(m, id)
	if err != nil {
		return nil, err
	}
	rec := newRecord(id, pol, &req, 1, m)
	props, err := rec.properties()
	if err != nil {
		return nil, err
	}
	create := nodes.CreateRequest{
		NodeID: id.NodeID(), Labels: []string{labelAll, tenantLabel(req.TenantRef)},
		Properties: props, SetNow: claimTimes(req.TTLMs),
	}
	create.IndexFields = m.fenceFields(create.Properties)
	res, err := s.create(ctx, m, id, create)
	if err != nil {
		return nil, fromCluster(err)
	}
	if res.Created {
		stored, err := recordOf(&res.Node)
		if err != nil {
			return nil, err
		}
		return &ReserveResult{Record: stored, Created: true}, nil
	}
	return s.classify(ctx, m, id, pol, &req, &res.Node, res.TimeMs)
}

// mode is how the cluster lets this service write claims (QueryMode).
// Where the cluster binds claims to its replicated policy set but has
// none yet, the service proposes its own set as the seed first, so that
// a node given policies serves reserves from the start, whichever node
// seeds first (a seed never replaces a set the cluster has).
func (s *Service) mode(ctx context.Context) (mode, error) {
	m, err := s.askMode(ctx)
	if err != nil || !m.Bound || m.Configured || s.seed == nil {
		return m, err
	}
	// Refused (a caller that is no admin, over a remote) or not: the
	// reserve that follows reports the set the cluster has.
	_, _ = s.Seed(ctx, s.seed)
	return m, nil
}

// mode is a ModeView, or the legacy answer of a server that has no
// authority module.
type mode struct{ ModeView }

// askMode asks QueryMode. Only the newest answer (claims bound, fences
// from the log index) is taken from the replica behind the service, which
// may be stale (a command sent on it is refused on every replica alike if
// the cluster has lowered the set since); any other is confirmed by a
// linearizable read, as nodes.IndexFieldsEnabled confirms its own. A
// replica that lags (one wiped and rejoining reads as an ungated state)
// must not make the service fence by count where the cluster fences by
// log index: every fence is the index of the write that issued it. A server that does not know the query has no authority
// module: the service binds policies itself, and fences as that server
// lets it.
func (s *Service) askMode(ctx context.Context) (mode, error) {
	for _, stale := range []bool{true, false} {
		var v ModeView
		err := fsm.Ask(ctx, s.r, QueryMode, stale, struct{}{}, &v)
		if e := errs.From(err); e != nil && e.Code == errs.CodeInvalid && strings.HasPrefix(e.Message, "unknown query type") {
			on, err := s.nodes.IndexFieldsEnabled(ctx)
			return mode{ModeView{IndexFences: on}}, fromCluster(err)
		}
		if err != nil {
			return mode{}, fromCluster(err)
		}
		if v.Bound && (v.IndexFences || !stale) {
			return mode{v}, nil
		}
	}
	on, err := s.nodes.IndexFieldsEnabled(ctx)
	return mode{ModeView{IndexFences: on}}, fromCluster(err)
}

// localPolicy is the policy the service binds a claim to itself: none
// where the cluster binds it (Apply writes the policy fields), the
// service's own set's elsewhere.
func (s *Service) localPolicy(m mode, id ConceptID) (ConceptNamespacePolicy, error) {
	if m.Bound {
		return ConceptNamespacePolicy{}, nil
	}
	if s.seed == nil {
		return ConceptNamespacePolicy{}, errs.New(errs.CodeInvalid, "no concept namespace policies are configured")
	}
	return s.seed.Select(id)
}

// create writes a new claim: CmdReserve where the cluster binds claims
// to its policy set, the bare node_create elsewhere.
func (s *Service) create(ctx context.Context, m mode, id ConceptID, req nodes.CreateRequest) (*nodes.CreateResult, error) {
	if !m.Bound {
		return s.nodes.CreateIfAbsent(ctx, req)
	}
	v, body, err := req.Command()
	if err != nil {
		return nil, err
	}
	var out nodes.CreateResult
	res, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdReserve, Version: 1}, boundCmd{ConceptID: id.String(), NodeVersion: v, Node: body}, &out)
	if err != nil {
		return nil, err
	}
	out.TimeMs = res.Time
	return &out, nil
}

// reclaim hands a claim to a new request: CmdReclaim where the cluster
// binds claims to its policy set, the bare node_cas elsewhere.
func (s *Service) reclaim(ctx context.Context, m mode, id ConceptID, req nodes.CASRequest) (*nodes.CASResult, error) {
	if !m.Bound {
		return s.nodes.CompareAndSet(ctx, req)
	}
	v, body, err := req.Command()
	if err != nil {
		return nil, err
	}
	var out nodes.CASResult
	res, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdReclaim, Version: 1}, boundCmd{ConceptID: id.String(), NodeVersion: v, Node: body}, &out)
	if err != nil {
		return nil, err
	}
	out.TimeMs = res.Time
	return &out, nil
}

// claimTimes are the fields a new claim takes from FSM time.
func claimTimes(ttlMs int64) map[string]int64 {
	return map[string]int64{fieldCreatedAt: 0, fieldReservedAt: 0, fieldUpdatedAt: 0, fieldExpiresAt: ttlMs}
}

func newRecord(id ConceptID, pol ConceptNamespacePolicy, req *ReserveRequest, fence uint64, m mode) *Record {
	fp := fingerprint(id, req, m)
	refs := append([]string{}, req.ProvenanceRefs...)
	return &Record{
		Schema: schemaV1, ConceptID: id.String(), Namespace: id.Namespace, Prefix: id.Prefix, Number: id.Number,
		PolicyVersion: pol.PolicyVersion, RangeMin: pol.Min, RangeMax: pol.Max,
		TenantRef: req.TenantRef, RepositoryRef: req.RepositoryRef, LaneRef: req.LaneRef,
		OwnerRef: req.OwnerRef, RequestRef: req.RequestRef, DesignRef: req.DesignRef, ProvenanceRefs: refs,
		PurposeDigest: req.PurposeDigest, Fingerprint: fp,
		ReservationID: reservationID(id, req.RequestRef, fp, fence),
		State:         Reserved, Fence: fence, Visibility: VisibilityNone,
	}
}

// classify decides what a failed create met. node is the stored node and
// nowMs the FSM time at which it was read. A reclaim CAS that loses reads
// the new winner from its own result and classifies again, a bounded
// number of times; then the authority fails closed.
func (s *Service) classify(ctx context.Context, m mode, id ConceptID, pol ConceptNamespacePolicy, req *ReserveRequest, node *nodes.Record, nowMs int64) (*ReserveResult, error) {
	for attempt := 0; attempt < maxReclaimAttempts; attempt++ {
		cur, err := recordOf(node)
		if err != nil {
			return nil, err
		}
		if cur.RequestRef == req.RequestRef && sameFingerprint(cur.Fingerprint, id, req) {
			return &ReserveResult{Record: cur, Replayed: true}, nil
		}
		if !reclaimable(cur, nowMs) {
			return nil, conflict(cur)
		}
		next := newRecord(id, pol, req, cur.Fence+1, m)
		next.PrevFence = cur.Fence
		cas, err := reclaimCAS(cur, next, req.TTLMs)
		if err != nil {
			return nil, err
		}
		cas.IndexFields = m.fenceFields(cas.Updates)
		res, err := s.reclaim(ctx, m, id, cas)
		if err != nil {
			return nil, fromCluster(err)
		}
		if res.Swapped {
			stored, err := recordOf(&res.Node)
			if err != nil {
				return nil, err
			}
			return &ReserveResult{Record: stored, Reclaimed: true}, nil
		}
		node, nowMs = &res.Node, res.TimeMs
	}
	return nil, failClosed(id.String(), maxReclaimAttempts)
}

// reclaimable: released or expired (or past its expiry without being
// marked), and never visible in a repository.
func reclaimable(r *Record, nowMs int64) bool {
	if r.Visibility != VisibilityNone {
		return false
	}
	switch r.State {
	case Released, Expired:
		return true
	case Reserved, Materialized:
		return nowMs >= r.ExpiresAtMs
	}
	return false
}

// reclaimCAS replaces cur by next in one CAS conditioned on cur's
// reservation id, fingerprint, state, fence and visibility (and, for a
// claim not yet marked expired, on its deadline having passed).
func reclaimCAS(cur, next *Record, ttlMs int64) (nodes.CASRequest, error) {
	updates, err := next.properties()
	if err != nil {
		return nodes.CASRequest{}, err
	}
	// Timestamps of the old claim's lifecycle do not describe the new one.
	for _, f := range timestampField { // order-free: sets keys of a map
		if _, kept := updates[f]; !kept {
			updates[f] = nil
		}
	}
	times := claimTimes(ttlMs)
	for f := range times { // order-free: deletes keys of a map
		delete(updates, f)
	}
	req := nodes.CASRequest{
		NodeID: ConceptID{Namespace: next.Namespace, Prefix: next.Prefix, Number: next.Number}.NodeID(),
		Conditions: map[string]any{
			"reservation_id": cur.ReservationID, "fingerprint": cur.Fingerprint,
			fieldState: string(cur.State), fieldFence: cur.Fence, fieldVisibility: string(VisibilityNone),
		},
		Updates:    updates,
		TimeFields: nodes.TimeFields{SetNow: times},
	}
	if cur.State == Reserved || cur.State == Materialized {
		req.Due = []string{fieldExpiresAt}
	}
	if cur.TenantRef != next.TenantRef {
		req.AddLabels = []string{tenantLabel(next.TenantRef)}
		req.RemoveLabels = []string{tenantLabel(cur.TenantRef)}
	}
	return req, nil
}

// conflict is the answer for an id another request holds: only the
// winner's public fields travel.
func conflict(winner *Record) error {
	e := errs.Errorf(errs.CodeConflict, "%s is held by another request (%s, fence %d)", winner.ConceptID, winner.State, winner.Fence)
	e.Detail = winner.publicFields()
	return e
}
