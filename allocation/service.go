package allocation

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Service is the typed Go API of the allocation domain over any Proposer
// and Reader (a cluster.Node, a domain.Conn, or a bare FSM in tests).
// Requests are checked here first (a bad one is never proposed) and again
// by the FSM. A loser of a conflict key, or an action on a superseded
// task, returns a *Conflict error: the spec's flat 409 body, for which
// errors.Is(err, errs.Conflict) holds.
type Service struct {
	p fsm.Proposer
	r fsm.Reader
}

// NewService returns the allocation API over p and r.
func NewService(p fsm.Proposer, r fsm.Reader) *Service { return &Service{p: p, r: r} }

// PutSpaceRequest is the body of PUT /v1/spaces/{slug}.
type PutSpaceRequest struct {
	TenantRef       string       `json:"tenant_ref,omitempty"`
	Catalog         []CatalogRow `json:"catalog"`
	DeliveryModes   []string     `json:"delivery_modes,omitempty"`
	WindowMs        int64        `json:"window_ms,omitempty"`
	AdHocSlots      bool         `json:"adhoc_slots,omitempty"`
	ExpectedVersion *uint64      `json:"expected_version,omitempty"`
}

// PutSpace creates or replaces a space (controller role).
func (s *Service) PutSpace(ctx context.Context, slug string, req PutSpaceRequest) (*SpaceResult, error) {
	c := putSpaceCmd{Slug: slug, TenantRef: req.TenantRef, Catalog: req.Catalog, DeliveryModes: req.DeliveryModes,
		WindowMs: req.WindowMs, AdHocSlots: req.AdHocSlots, ExpectedVersion: req.ExpectedVersion}
	if _, _, err := c.normalize(slug); err != nil { // the tenant is the FSM's to default
		return nil, err
	}
	var out SpaceResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdPutSpace}, c, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSpace reads a space.
func (s *Service) GetSpace(ctx context.Context, slug string, cons fsm.Consistency) (*SpaceResult, error) {
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	var out SpaceResult
	if err := fsm.Ask(ctx, s.r, QuerySpace, cons == fsm.Stale, spaceQuery{Slug: slug}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// BindRequest is the body of POST /v1/spaces/{slug}/bind.
type BindRequest struct {
	Title      string  `json:"title"`
	WorkItemID *string `json:"work_item_id,omitempty"`
}

// Bind explains the bind a create_task of this title would make; it
// writes nothing.
func (s *Service) Bind(ctx context.Context, slug string, req BindRequest, cons fsm.Consistency) (*BindResult, error) {
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	var out BindResult
	if err := fsm.Ask(ctx, s.r, QueryBind, cons == fsm.Stale, bindQuery{Slug: slug, Title: req.Title, WorkItemID: req.WorkItemID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateTaskRequest is the body of POST /v1/spaces/{slug}/tasks; the
// Idempotency-Key header fills IdempotencyKey.
type CreateTaskRequest struct {
	Title          string  `json:"title"`
	DeliveryMode   string  `json:"delivery_mode"`
	WorkItemID     *string `json:"work_item_id,omitempty"`
	IdempotencyKey string  `json:"-"`
}

// CreateTask creates an open task holding the intent's conflict key, or
// returns the *Conflict naming the key's live occupant. A retry with the
// same IdempotencyKey and request returns the original task (Replayed);
// with another request, idempotency_conflict.
func (s *Service) CreateTask(ctx context.Context, slug string, req CreateTaskRequest) (*TaskResult, error) {
	c := createCmd{Space: slug, Intent: Intent{Title: req.Title, DeliveryMode: req.DeliveryMode, WorkItemID: req.WorkItemID}, IdempotencyKey: req.IdempotencyKey}
	if err := c.validate(); err != nil {
		return nil, err
	}
	var out Outcome
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdCreateTask}, c, &out); err != nil {
		return nil, err
	}
	if out.Conflict != nil {
		return nil, out.Conflict
	}
	if out.Task == nil {
		return nil, errs.New(errs.CodeInternal, "create answered neither a task nor a conflict")
	}
	return &TaskResult{Task: *out.Task, Replayed: out.Replayed}, nil
}

// WindowRequest is the body of POST /v1/spaces/{slug}/windows; the
// Idempotency-Key header (whole window) fills IdempotencyKey.
type WindowRequest struct {
	Proposals      []Proposal `json:"proposals"`
	IdempotencyKey string     `json:"-"`
}

// Window processes proposals as one allocation window: in (received_seq,
// payload_sha256) order, each against the state the ones before it
// left. With an IdempotencyKey, a retry of the same window returns the
// first answer.
func (s *Service) Window(ctx context.Context, slug string, req WindowRequest) (*WindowResult, error) {
	c := windowCmd{Space: slug, Proposals: req.Proposals}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := checkIdemKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	envelope := log.Command{Type: CmdWindow}
	if req.IdempotencyKey != "" {
		envelope.IdemScope, envelope.IdemKey = "allocation/window/"+slug, req.IdempotencyKey
	}
	var out WindowResult
	if _, err := fsm.Submit(ctx, s.p, envelope, c, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReserveRequest is the body of POST /v1/spaces/{slug}/reservations.
type ReserveRequest struct {
	ProposalID   string  `json:"proposal_id"`
	Title        string  `json:"title"`
	DeliveryMode string  `json:"delivery_mode"`
	WorkItemID   *string `json:"work_item_id,omitempty"`
}

// ReservationResult is the body of a reservation answer.
type ReservationResult struct {
	Reservation Reservation `json:"reservation" msgpack:"reservation"`
	Replayed    bool        `json:"-" msgpack:"replayed"`
}

// Reserve holds the intent's key for the space's window, or returns the
// *Conflict naming its live occupant. Reserving the same proposal with
// the same request again returns the live reservation.
func (s *Service) Reserve(ctx context.Context, slug string, req ReserveRequest) (*ReservationResult, error) {
	c := reserveCmd{Space: slug, ProposalID: req.ProposalID, Intent: Intent{Title: req.Title, DeliveryMode: req.DeliveryMode, WorkItemID: req.WorkItemID}}
	if err := c.validate(); err != nil {
		return nil, err
	}
	var out Outcome
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdReserve}, c, &out); err != nil {
		return nil, err
	}
	if out.Conflict != nil {
		return nil, out.Conflict
	}
	if out.Reservation == nil {
		return nil, errs.New(errs.CodeInternal, "reserve answered neither a reservation nor a conflict")
	}
	return &ReservationResult{Reservation: *out.Reservation, Replayed: out.Replayed}, nil
}

// CommitRequest is the body of .../reservations/{proposal_id}/commit.
type CommitRequest struct {
	Winner *Winner `json:"winner"`
}

// Commit turns a live reservation into the key's occupancy by winner.
func (s *Service) Commit(ctx context.Context, slug, proposalID string, req CommitRequest) (*Occupancy, error) {
	var out Occupancy
	if err := s.reservation(ctx, CmdCommit, reservationCmd{Space: slug, ProposalID: proposalID, Winner: req.Winner}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Abort drops a reservation that was not committed.
func (s *Service) Abort(ctx context.Context, slug, proposalID string) (*AbortResult, error) {
	var out AbortResult
	if err := s.reservation(ctx, CmdAbort, reservationCmd{Space: slug, ProposalID: proposalID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Release frees the key of a committed reservation.
func (s *Service) Release(ctx context.Context, slug, proposalID string) (*AbortResult, error) {
	var out AbortResult
	if err := s.reservation(ctx, CmdRelease, reservationCmd{Space: slug, ProposalID: proposalID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *Service) reservation(ctx context.Context, t log.Type, c reservationCmd, out any) error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if err := checkProposalID(c.ProposalID); err != nil {
		return err
	}
	_, err := fsm.Submit(ctx, s.p, log.Command{Type: t}, c, out)
	return err
}
