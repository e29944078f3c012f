package capacity

import (
	"context"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Service is the typed Go API of capacity leases over any Proposer and
// Reader. Requests are checked here first (a bad one is never proposed)
// and again by the FSM. A denial returns the result that explains it
// together with an error of the decision's code (errs.Exhausted,
// errs.StaleEpoch, errs.StaleFence, errs.Expired, errs.Invalid,
// errs.Backpressure, errs.Forbidden).
//
// Every request is in the graph its GraphRef names, DefaultGraph when it
// names none, and its SchemaVersion may be left out (it is SchemaVersion).
// A graph other than the default one needs a cluster that enables the
// command versions that brought graphs (Require); one that does not
// refuses it with unavailable.
type Service struct {
	p      fsm.Proposer
	r      fsm.Reader
	scopes fsm.LedgerScopes // which idempotency scope the cluster takes
}

// NewService returns the capacity API over p and r.
func NewService(p fsm.Proposer, r fsm.Reader) *Service { return &Service{p: p, r: r} }

// Acquire is AcquireCapacity: every demand granted in one command, or
// none. Replaying the same idempotency key with the same request in the
// same graph and tenant, by any principal of the tenant once the cluster
// enables capacity_acquire 4 (by the same principal before), returns the
// first grant (Replayed); with another request, idempotency_conflict. A
// denial is not kept: a retry under its key asks again.
func (s *Service) Acquire(ctx context.Context, req AcquireRequest) (*AcquireResult, error) {
	if err := checkSchema(req.SchemaVersion); err != nil {
		return nil, err
	}
	if err := bounds.Identifier("idempotency_key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	cmd := acquireInGraph{GraphRef: graphKey(req.GraphRef), acquireCmd: acquireCmd{
		TenantRef: req.TenantRef, WorkItemID: req.WorkItemID, OwnerDigest: req.OwnerDigest, Priority: req.Priority,
		Demands: req.Demands, LeaseID: req.LeaseID, TTLMs: req.TTLMs,
		CostBudgetMicros: req.CostBudgetMicros, TokenBudget: req.TokenBudget,
	}}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	if err := checkGraph(cmd.GraphRef); err != nil {
		return nil, err
	}
	envelope := log.Command{Type: CmdAcquire, Version: commandVersion(CmdAcquire, cmd.GraphRef), IdemKey: req.IdempotencyKey}
	var out AcquireResult
	res, err := s.submitKeyed(ctx, envelope, "acquire", cmd.GraphRef, req.TenantRef, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed = res.Replayed
	return &out, out.Decision.Err(out.Message)
}

// Renew is RenewCapacity: every lease's expiry moves to FSM now + TTL and
// its epoch advances, or nothing changes. The result's Refs are the
// tokens to present next.
func (s *Service) Renew(ctx context.Context, req LeasesRequest) (*LeasesResult, error) {
	return s.leases(ctx, CmdRenew, "renew", req)
}

// Release is ReleaseCapacity: every lease's usage returns to its cell and
// the lease ends, or nothing changes.
//
// A renew or release with an idempotency key replays as an acquire does:
// by any principal of the tenant once the cluster enables version 3 of
// the command, by the same principal before.
func (s *Service) Release(ctx context.Context, req LeasesRequest) (*LeasesResult, error) {
	return s.leases(ctx, CmdRelease, "release", req)
}

func (s *Service) leases(ctx context.Context, t log.Type, name string, req LeasesRequest) (*LeasesResult, error) {
	if err := checkSchema(req.SchemaVersion); err != nil {
		return nil, err
	}
	if err := bounds.OptionalIdentifier("idempotency_key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	cmd := leasesInGraph{GraphRef: graphKey(req.GraphRef),
		leasesCmd: leasesCmd{TenantRef: req.TenantRef, OwnerDigest: req.OwnerDigest, Leases: req.Leases, TTLMs: req.TTLMs}}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	if err := checkGraph(cmd.GraphRef); err != nil {
		return nil, err
	}
	if err := bounds.Identifier("owner_digest", req.OwnerDigest); err != nil {
		return nil, err
	}
	envelope := log.Command{Type: t, Version: commandVersion(t, cmd.GraphRef), IdemKey: req.IdempotencyKey}
	var out LeasesResult
	res, err := s.submitKeyed(ctx, envelope, name, cmd.GraphRef, req.TenantRef, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed = res.Replayed
	return &out, out.Decision.Err(out.Message)
}

// submitKeyed submits a command of operation op in (graph, tenant) whose
// envelope may carry an idempotency key: with one, under the scope the
// cluster's enabled version takes and, if the cluster refuses that scope
// (the enabled version moved since the service learnt it), once more
// under the other (fsm.LedgerScopes).
func (s *Service) submitKeyed(ctx context.Context, env log.Command, op, graph, tenant string, payload, out any) (*fsm.Response, error) {
	if env.IdemKey == "" {
		return fsm.Submit(ctx, s.p, env, payload, out)
	}
	var res *fsm.Response
	err := s.scopes.Send(ctx, s.r, env.Type, tenantLedgerSince(env.Type), scopeRefused, func(keyed bool) error {
		env.IdemScope = scopeFor(op, graph, tenant, keyed)
		var err error
		res, err = fsm.Submit(ctx, s.p, env, payload, out)
		return err
	})
	return res, err
}

// Reclaim is ReclaimExpiredCapacity: at most max_count expired leases of
// a graph of the tenant (or of one cell) end in one command; NextCursor
// goes on.
func (s *Service) Reclaim(ctx context.Context, req ReclaimRequest) (*ReclaimResult, error) {
	if err := checkSchema(req.SchemaVersion); err != nil {
		return nil, err
	}
	cmd := reclaimInGraph{GraphRef: graphKey(req.GraphRef),
		reclaimCmd: reclaimCmd{TenantRef: req.TenantRef, CellID: req.CellID, MaxCount: req.MaxCount, Cursor: req.Cursor}}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	if err := checkGraph(cmd.GraphRef); err != nil {
		return nil, err
	}
	if _, err := decodeReclaimCursor(cmd.GraphRef, req.TenantRef, req.CellID, req.Cursor); err != nil {
		return nil, err
	}
	var out ReclaimResult
	envelope := log.Command{Type: CmdReclaim, Version: commandVersion(CmdReclaim, cmd.GraphRef)}
	if _, err := fsm.Submit(ctx, s.p, envelope, cmd, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateCell is UpdateCapacityCell, for controllers.
func (s *Service) UpdateCell(ctx context.Context, req UpdateCellRequest) (*UpdateCellResult, error) {
	if err := checkSchema(req.SchemaVersion); err != nil {
		return nil, err
	}
	cmd := updateCellInGraph{GraphRef: graphKey(req.GraphRef),
		updateCellCmd: updateCellCmd{TenantRef: req.TenantRef, Cell: req.Cell, ExpectedEpoch: req.ExpectedEpoch}}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	if err := checkGraph(cmd.GraphRef); err != nil {
		return nil, err
	}
	var out UpdateCellResult
	envelope := log.Command{Type: CmdUpdateCell, Version: commandVersion(CmdUpdateCell, cmd.GraphRef)}
	if _, err := fsm.Submit(ctx, s.p, envelope, cmd, &out); err != nil {
		return nil, err
	}
	return &out, out.Decision.Err(out.Message)
}

// Status is CapacityStatus: a page of the cells of a graph of the tenant,
// with usage.
func (s *Service) Status(ctx context.Context, req ReadRequest, c fsm.Consistency) (*ReadResult, error) {
	return s.read(ctx, QueryStatus, req, c)
}

// Reconcile is ReconcileCapacity: a page of the leases of a graph of the
// tenant and their cells, as the FSM holds them.
func (s *Service) Reconcile(ctx context.Context, req ReadRequest, c fsm.Consistency) (*ReadResult, error) {
	return s.read(ctx, QueryReconcile, req, c)
}

func (s *Service) read(ctx context.Context, t fsm.QueryType, req ReadRequest, c fsm.Consistency) (*ReadResult, error) {
	if err := checkSchema(req.SchemaVersion); err != nil {
		return nil, err
	}
	q := readQuery{TenantRef: req.TenantRef, GraphRef: graphKey(req.GraphRef), LeaseID: req.LeaseID, CellID: req.CellID, MaxCount: req.MaxCount, Cursor: req.Cursor}
	var out ReadResult
	if err := fsm.Ask(ctx, s.r, t, c == fsm.Stale, q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Require fails with unavailable, naming what is missing, unless the
// cluster behind the service enables every capacity command at the
// version this package sends. Call it before submitting work.
func (s *Service) Require(ctx context.Context) error {
	return fsm.Require(ctx, s.r, Module().Capabilities())
}
