package workitem

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// Idempotency scopes. An admission's key (submit and submit-batch share
// one scope: a key names one admission) and a claim's key are scoped by
// (tenant, graph). Until the versions below, the scope is
// "workitem/<op>/<32 hex digits of SHA-256(tenant NUL graph)>" and the
// FSM keys its ledger rows by principal as well, so a second principal
// of the tenant repeating a key ran a second admission. From them on the
// scope is that followed by "/<tenant>", the FSM keys the rows by scope
// and key alone after checking that the principal may act for that
// tenant (fsm.CommandSpec.LedgerTenant), and any member of the tenant
// who repeats a key gets the first result or idempotency_conflict.
const (
	admitTenantLedger = 3 // workitem_submit, workitem_submit_batch
	claimTenantLedger = 2 // workitem_claim
)

const (
	opAdmit = "admit"
	opClaim = "claim"
)

// scope is the idempotency scope of an operation in (tenant, graph)
// before the tenant-keyed versions: of fixed length whatever the refs.
func scope(op, tenant, graph string) string {
	return "workitem/" + op + "/" + graphHash(tenant, graph)
}

// scopeFor is the scope a command of (tenant, graph) must carry: scope,
// followed by "/" and the tenant when keyed (at most 560 bytes, within
// log.MaxScopeBytes).
func scopeFor(op, tenant, graph string, keyed bool) string {
	return hashedScope(op).Keyed(scope(op, tenant, graph), tenant, keyed)
}

// hashedScope is the format of op's scopes (fsm.HashedScope): its
// Tenant and Legacy are the FSM's LedgerTenant and LedgerLegacyScope for
// op's commands, so that the FSM reads the tenant out of a tenant-keyed
// scope (the handler checks the whole scope against its payload) and a
// retry across the switch finds its first attempt's row.
func hashedScope(op string) fsm.HashedScope {
	return fsm.HashedScope{Prefix: "workitem/" + op + "/", HashLen: graphHashLen}
}

// checkScope requires cmd to carry the scope of (tenant, graph) that the
// cluster's enabled version of cmd's type asks for (from is the
// version that keys by tenant), or, when optional, no key at all.
func checkIdemScope(tx *fsm.Tx, cmd *log.Command, op, tenant, graph string, from uint16, what string) error {
	if cmd.IdemKey == "" || cmd.IdemScope != scopeFor(op, tenant, graph, tx.EnabledVersion(cmd.Type) >= from) {
		return fieldErr("idempotency_key", "%s needs an idempotency key in the scope of its tenant and graph", what)
	}
	return nil
}

// scopeRefused reports whether err refuses a command's idempotency
// scope: the FSM's refusal of a scope that names no tenant, or the
// handler's of a scope it does not take. The service checked the key
// itself, so such a refusal is always about the scope it built.
func scopeRefused(err error) bool {
	e := errs.From(err)
	return e != nil && e.Code == errs.CodeInvalid && e.Detail["field"] == "idempotency_key"
}

// proposeScoped is propose for a command keyed in (tenant, graph): it
// sends the scope the cluster takes and, if the cluster refuses it (the
// enabled version moved since the service learnt it), the other one.
func (s *Service) proposeScoped(ctx context.Context, env log.Command, op, tenant, graph string, from uint16, payload, out any) (bool, error) {
	var replayed bool
	err := s.scopes.Send(ctx, s.r, env.Type, from, scopeRefused, func(keyed bool) error {
		env.IdemScope = scopeFor(op, tenant, graph, keyed)
		var err error
		replayed, err = s.propose(ctx, env, payload, out)
		return err
	})
	return replayed, err
}
