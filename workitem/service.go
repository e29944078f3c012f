package workitem

import (
	"context"
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Service is the typed Go API of work-item admission over any Proposer
// and Reader (a cluster.Node, a domain.Conn, a bare FSM in tests).
// Requests are checked here first (a bad one is never proposed) and
// again by the FSM. Failures are *errs.Error: invalid (detail.field names
// the field; detail.reason "dependency_missing" or "dependency_failed"
// for a dependency), forbidden, conflict, exhausted (detail in_flight
// and cap), idempotency_conflict, not_found, stale_fence, expired,
// too_large, backpressure, unavailable.
type Service struct {
	p      fsm.Proposer
	r      fsm.Reader
	scopes fsm.LedgerScopes
}

// NewService returns the work-item API over p and r.
func NewService(p fsm.Proposer, r fsm.Reader) *Service { return &Service{p: p, r: r} }

// Submit is SubmitWorkItem. The same idempotency key with the same
// request returns the first result with Replayed set and allocates
// nothing; with another request, idempotency_conflict.
func (s *Service) Submit(ctx context.Context, req SubmitRequest) (*SubmitResult, error) {
	graph := graphOf(req.GraphRef)
	if err := ident("idempotency_key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	spec, err := specOf(req, "")
	if err != nil {
		return nil, err
	}
	cmd := submitCmd{TenantRef: req.TenantRef, GraphRef: graph, Item: spec}
	if err := cmd.validate(newestSubmit); err != nil {
		return nil, err
	}
	if err := checkSpecExtensions([]itemSpec{cmd.Item}, "", newestRules); err != nil {
		return nil, err
	}
	var out SubmitResult
	env := log.Command{Type: CmdSubmit, IdemKey: req.IdempotencyKey}
	replayed, err := s.proposeScoped(ctx, env, opAdmit, req.TenantRef, graph, admitTenantLedger, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed = replayed
	out.tidy()
	return &out, nil
}

// SubmitBatch is SubmitWorkItems: every child admitted in one command, or
// none. A child naming another tenant or graph than the parent is
// invalid.
func (s *Service) SubmitBatch(ctx context.Context, req BatchRequest) (*BatchResult, error) {
	graph := graphOf(req.GraphRef)
	if err := ident("idempotency_key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	if len(req.Requests) < 1 || len(req.Requests) > MaxBatch {
		return nil, fieldErr("requests", "a batch holds 1 to %d requests, not %d", MaxBatch, len(req.Requests))
	}
	cmd := batchCmd{TenantRef: req.TenantRef, GraphRef: graph, Items: make([]itemSpec, len(req.Requests))}
	for i, child := range req.Requests {
		prefix := fmt.Sprintf("requests[%d].", i)
		if child.TenantRef != "" && child.TenantRef != req.TenantRef {
			return nil, fieldErr(prefix+"tenant_ref", "a batch's requests share the parent's tenant")
		}
		if child.GraphRef != "" && child.GraphRef != graph {
			return nil, fieldErr(prefix+"graph_ref", "a batch's requests share the parent's graph")
		}
		spec, err := specOf(child, prefix)
		if err != nil {
			return nil, err
		}
		spec.IdempotencyKey = child.IdempotencyKey
		cmd.Items[i] = spec
	}
	if err := cmd.validate(newestSubmit); err != nil {
		return nil, err
	}
	if err := checkSpecExtensions(cmd.Items, "requests[%d].", newestRules); err != nil {
		return nil, err
	}
	var out BatchResult
	env := log.Command{Type: CmdSubmitBatch, IdemKey: req.IdempotencyKey}
	replayed, err := s.proposeScoped(ctx, env, opAdmit, req.TenantRef, graph, admitTenantLedger, cmd, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed = replayed
	for i := range out.Results {
		out.Results[i].Replayed = replayed
		out.Results[i].tidy()
	}
	return &out, nil
}

// Claim takes the best claimable item (see ClaimRequest); none:
// not_found.
func (s *Service) Claim(ctx context.Context, req ClaimRequest) (*ClaimResult, error) {
	cmd := claimCmd{TenantRef: req.TenantRef, GraphRef: graphOf(req.GraphRef), OwnerRef: req.OwnerRef, Kinds: req.Kinds,
		WorkItemID: req.WorkItemID, TTLMs: req.TTLMs}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	if err := optionalIdent("idempotency_key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	env := log.Command{Type: CmdClaim}
	var out ClaimResult
	var replayed bool
	var err error
	if req.IdempotencyKey != "" {
		env.IdemKey = req.IdempotencyKey
		replayed, err = s.proposeScoped(ctx, env, opClaim, cmd.TenantRef, cmd.GraphRef, claimTenantLedger, cmd, &out)
	} else {
		replayed, err = s.propose(ctx, env, cmd, &out)
	}
	if err != nil {
		return nil, err
	}
	out.Replayed = replayed
	out.WorkItem.tidy()
	return &out, nil
}

// Complete ends a claimed item with the claim's attempt and fence.
func (s *Service) Complete(ctx context.Context, req CompleteRequest) (*ItemResult, error) {
	cmd := completeCmd(req)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	return s.item(ctx, log.Command{Type: CmdComplete}, cmd)
}

// Cancel cancels a pending or claimed item.
func (s *Service) Cancel(ctx context.Context, req CancelRequest) (*ItemResult, error) {
	cmd := cancelCmd(req)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	return s.item(ctx, log.Command{Type: CmdCancel}, cmd)
}

func (s *Service) item(ctx context.Context, env log.Command, cmd any) (*ItemResult, error) {
	var out ItemResult
	if _, err := s.propose(ctx, env, cmd, &out); err != nil {
		return nil, err
	}
	out.WorkItem.tidy()
	return &out, nil
}

// Get reads one item.
func (s *Service) Get(ctx context.Context, req GetRequest, c fsm.Consistency) (*ItemResult, error) {
	q := getQuery(req)
	if err := q.validate(); err != nil {
		return nil, err
	}
	var out ItemResult
	if err := fsm.Ask(ctx, s.r, QueryGet, c == fsm.Stale, q, &out); err != nil {
		return nil, err
	}
	out.WorkItem.tidy()
	return &out, nil
}

// List reads one page of a graph's items.
func (s *Service) List(ctx context.Context, req ListRequest, c fsm.Consistency) (*ListResult, error) {
	q := listQuery{TenantRef: req.TenantRef, GraphRef: graphOf(req.GraphRef), Status: req.Status, After: req.After, Limit: req.Limit}
	if q.Limit == 0 {
		q.Limit = MaxPage
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	var out ListResult
	if err := fsm.Ask(ctx, s.r, QueryList, c == fsm.Stale, q, &out); err != nil {
		return nil, err
	}
	if out.WorkItems == nil {
		out.WorkItems = []Summary{}
	}
	return &out, nil
}

// Require fails with unavailable, naming what is missing, unless the
// cluster behind the service enables every work-item command at the
// version this package sends. Call it before submitting work.
func (s *Service) Require(ctx context.Context) error {
	return fsm.Require(ctx, s.r, fsm.ServedBy(Module()))
}

// propose encodes payload once, bounds it, proposes it in env and
// decodes the result into out; replayed says the ledger answered.
func (s *Service) propose(ctx context.Context, env log.Command, payload, out any) (bool, error) {
	body, err := log.Marshal(payload)
	if err != nil {
		return false, errs.Errorf(errs.CodeInvalid, "encode request: %v", err)
	}
	if err := checkPayload(len(body)); err != nil {
		return false, err
	}
	env.Payload, env.Version = body, 1
	res, err := s.p.Propose(ctx, env)
	if err != nil {
		return false, err
	}
	if res.Err != nil {
		return false, res.Err
	}
	if err := log.Unmarshal(res.Result, out); err != nil {
		return false, errs.Errorf(errs.CodeInternal, "decode result: %v", err)
	}
	return res.Replayed, nil
}

// tidy makes lists that came back empty encode as [] rather than null.
func (r *SubmitResult) tidy() {
	r.ProvenanceRefs, r.ChangedIDs = nonNil(r.ProvenanceRefs), nonNil(r.ChangedIDs)
}

func (w *WorkItem) tidy() {
	w.DependsOn, w.ProvenanceRefs = nonNil(w.DependsOn), nonNil(w.ProvenanceRefs)
}
