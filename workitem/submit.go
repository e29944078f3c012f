package workitem

import (
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// applySubmit admits one item; applySubmitBatch admits 1 to 128 in one
// command. From version 2 on (once the cluster enables it, so that
// every replica agrees) an item's metadata.resource_reservation, if it
// has one, must pass the extension's closed schema and fingerprint
// (422 invalid, detail.reason extension_invalid or fingerprint_mismatch);
// version 1 keeps it as opaque metadata, and reserve re-reads it anyway. Both check everything first (bounds and caller:
// submitCommand, commands.go; then, in admit, the scope's idempotency
// envelope, then each item against the state and the items
// before it) and write only once all of it holds: an error allocates
// nothing, no sequence, no id, no event.
func applySubmit(tx *fsm.Tx, cmd *log.Command, c *submitCmd) (any, error) {
	res, err := admit(tx, cmd, c.TenantRef, c.GraphRef, []itemSpec{c.Item}, "")
	if err != nil {
		return nil, err
	}
	return res.Results[0], nil
}

func applySubmitBatch(tx *fsm.Tx, cmd *log.Command, c *batchCmd) (any, error) {
	return admit(tx, cmd, c.TenantRef, c.GraphRef, c.Items, "requests[%d].")
}

// decode bounds and decodes a command's payload.
func decode(cmd *log.Command, v any) error {
	if err := checkPayload(len(cmd.Payload)); err != nil {
		return err
	}
	return fsm.DecodePayload(cmd.Payload, v)
}

// checkMember requires the member role in tenant (403 otherwise).
func checkMember(p identity.Principal, tenant string) error {
	if !p.InTenant(tenant) || !p.HasRole(identity.RoleMember) {
		return errs.Errorf(errs.CodeForbidden, "principal %q may not change work items of tenant %q", p.ID, tenant)
	}
	return nil
}

// planned is one item admit has checked and will write.
type planned struct {
	item      *WorkItem
	waitingOn []string // dependencies not yet succeeded: edges to add
	cap       int64
}

// admit checks every spec in order and then writes them all, once the
// caller's access held (submitCommand). prefix, if set, is the batch
// child's field prefix (a format of its index).
func admit(tx *fsm.Tx, cmd *log.Command, tenant, graph string, specs []itemSpec, prefix string) (*BatchResult, error) {
	if err := checkIdemScope(tx, cmd, opAdmit, tenant, graph, admitTenantLedger, "an admission"); err != nil {
		return nil, err
	}
	g, err := getGraph(tx, tenant, graph)
	if err != nil {
		return nil, err
	}
	flying, err := inFlight(tx, tenant)
	if err != nil {
		return nil, err
	}
	batch := map[string]*WorkItem{} // the items planned so far, by id
	plan := make([]planned, 0, len(specs))
	for i := range specs {
		field := func(name string) string {
			if prefix == "" {
				return name
			}
			return fmt.Sprintf(prefix, i) + name
		}
		p, err := check(tx, cmd, tenant, graph, &specs[i], i, flying+int64(i), batch, field)
		if err != nil {
			if prefix != "" {
				err = withDetail(err, "request_index", i)
			}
			return nil, err
		}
		g.LastSequence++
		p.item.CommandSequence = g.LastSequence
		batch[p.item.WorkItemID] = p.item
		plan = append(plan, p)
	}
	out := &BatchResult{TenantRef: tenant, GraphRef: graph, IdempotencyKey: cmd.IdemKey, Created: true,
		BatchSequenceRange: SequenceRange{First: plan[0].item.CommandSequence, Last: g.LastSequence}}
	for k, p := range plan {
		res, err := write(tx, p, flying+int64(k)+1)
		if err != nil {
			return nil, err
		}
		out.Results = append(out.Results, res)
	}
	if err := tx.Insert(tableGraphs, &g); err != nil {
		return nil, internal("allocate sequences", err)
	}
	if err := addInFlight(tx, tenant, int64(len(plan))); err != nil {
		return nil, err
	}
	return out, nil
}

// check decides whether spec (the i-th) may be admitted after the items
// planned before it, with flying items already in flight; it returns
// the item to write, without a sequence yet.
func check(tx *fsm.Tx, cmd *log.Command, tenant, graph string, s *itemSpec, i int, flying int64,
	batch map[string]*WorkItem, field func(string) string) (planned, error) {
	if s.DeadlineUnix != nil && *s.DeadlineUnix*1000 <= tx.Now {
		return planned{}, fieldErr(field("deadline_unix"), "%d has passed (FSM time %d ms)", *s.DeadlineUnix, tx.Now)
	}
	id := s.WorkItemID
	if id == "" {
		id = fmt.Sprintf("%s%d-%d", generatedIDPrefix, tx.Index, i)
	}
	if old, err := getItem(tx, tenant, id); err != nil {
		return planned{}, err
	} else if old != nil || batch[id] != nil {
		e := errs.Errorf(errs.CodeConflict, "work item %q exists in tenant %q", id, tenant)
		e.Detail = map[string]any{"field": field("work_item_id"), "work_item_id": id}
		return planned{}, e
	}
	deps := Dependencies{Total: int64(len(s.DependsOn))}
	var waiting []string
	for k, d := range s.DependsOn {
		dep := batch[d]
		if dep == nil {
			var err error
			if dep, err = getItem(tx, tenant, d); err != nil {
				return planned{}, err
			}
		}
		depField := field(fmt.Sprintf("depends_on[%d]", k))
		switch {
		case dep == nil:
			// Another tenant's item answers the same: nothing leaks.
			return planned{}, depError(depField, d, "dependency_missing", "no work item %q in tenant %q", d, tenant)
		case dep.Status == StatusFailed || dep.Status == StatusCancelled:
			return planned{}, depError(depField, d, "dependency_failed", "work item %q has ended %s", d, dep.Status)
		case dep.Status == StatusSucceeded:
			deps.Satisfied++
		default:
			waiting = append(waiting, d)
		}
	}
	if flying+1 > s.MaxTenantInFlight {
		e := errs.Errorf(errs.CodeExhausted, "tenant %q has %d work items in flight; the cap is %d", tenant, flying, s.MaxTenantInFlight)
		e.Detail = map[string]any{"in_flight": flying, "cap": s.MaxTenantInFlight}
		return planned{}, e
	}
	key := cmd.IdemKey
	if s.IdempotencyKey != "" {
		key = s.IdempotencyKey
	}
	it := &WorkItem{
		TenantRef: tenant, GraphRef: graph, WorkItemID: id, Kind: s.Kind, Priority: s.Priority, Status: StatusPending,
		DependsOn: nonNil(s.DependsOn), Dependencies: deps, InputRef: s.InputRef, CommandDigest: s.CommandDigest,
		PolicyDigest: s.PolicyDigest, CatalogDigest: s.CatalogDigest, ModelDigest: s.ModelDigest, MaxAttempts: s.MaxAttempts,
		DeadlineUnix: s.DeadlineUnix, Metadata: s.Metadata, ProvenanceRefs: nonNil(s.ProvenanceRefs), IdempotencyKey: key,
		SubmittedBy: tx.Principal.ID, CreatedAtMs: tx.Now, UpdatedAtMs: tx.Now, AdmittedIndex: tx.Index,
	}
	return planned{item: it, waitingOn: waiting, cap: s.MaxTenantInFlight}, nil
}

func depError(field, id, reason, format string, args ...any) *errs.Error {
	e := errs.Errorf(errs.CodeInvalid, field+": "+format, args...)
	e.Detail = map[string]any{"field": field, "reason": reason, "work_item_id": id}
	return e
}

// write stores a checked item with its edges, readiness, deadline and
// outbox event; flying is the tenant's in-flight count with it.
func write(tx *fsm.Tx, p planned, flying int64) (SubmitResult, error) {
	it := p.item
	seq, err := emit(tx, EventSubmitted, it)
	if err != nil {
		return SubmitResult{}, err
	}
	it.OutboxID = seq
	if err := put(tx, nil, it); err != nil {
		return SubmitResult{}, err
	}
	for _, d := range p.waitingOn {
		if err := tx.Insert(tableEdges, &edgeRow{TenantRef: it.TenantRef, DependencyID: d, DependentID: it.WorkItemID, DependentIndex: it.AdmittedIndex}); err != nil {
			return SubmitResult{}, internal("add dependency edge", err)
		}
	}
	if d := deadlineMs(it); d != 0 {
		if err := tx.Insert(tableDeadline, timeOf(d, it)); err != nil {
			return SubmitResult{}, internal("index deadline", err)
		}
	}
	return SubmitResult{
		WorkItemID: it.WorkItemID, TenantRef: it.TenantRef, GraphRef: it.GraphRef, Status: it.Status, Created: true,
		CommandSequence: it.CommandSequence, IdempotencyKey: it.IdempotencyKey, Dependencies: it.Dependencies,
		Quota: Quota{InFlight: flying, Cap: p.cap}, OutboxID: seq, CommandDigest: it.CommandDigest,
		ProvenanceRefs: it.ProvenanceRefs, ChangedIDs: []string{it.WorkItemID},
	}, nil
}

// withDetail adds one detail to an error (a copy).
func withDetail(err error, key string, v any) error {
	e := errs.From(err)
	n := *e
	n.Detail = map[string]any{key: v}
	for k, val := range e.Detail {
		n.Detail[k] = val
	}
	return &n
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
