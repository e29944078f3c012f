package workitem

import (
	"context"
	"strings"
	"sync"

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
// tenant (fsm.CommandSpec.LedgerTenant), and any caller of the tenant
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

// tenantScope is the scope from the tenant-keyed versions on: scope,
// "/" and the tenant (at most 560 bytes, within log.MaxScopeBytes).
func tenantScope(op, tenant, graph string) string { return scope(op, tenant, graph) + "/" + tenant }

// scopeFor is the scope a command of (tenant, graph) must carry: the
// tenant-keyed one when keyed.
func scopeFor(op, tenant, graph string, keyed bool) string {
	if keyed {
		return tenantScope(op, tenant, graph)
	}
	return scope(op, tenant, graph)
}

// scopeTenant reads the tenant out of a tenant-keyed scope of op: the
// FSM's LedgerTenant for op's commands. The handler checks the whole
// scope against its payload.
func scopeTenant(op string) func(string) (string, bool) {
	prefix := "workitem/" + op + "/"
	return func(s string) (string, bool) {
		rest, ok := strings.CutPrefix(s, prefix)
		if !ok || len(rest) < graphHashLen+2 || rest[graphHashLen] != '/' {
			return "", false
		}
		return rest[graphHashLen+1:], true
	}
}

// scopeLegacy is the scope a request in a tenant-keyed scope of op
// carried before the tenant-keyed versions (scope, without "/<tenant>";
// "" for anything else): the FSM's LedgerLegacyScope for op's commands,
// so that a retry across the switch finds its first attempt's row.
func scopeLegacy(op string) func(string) string {
	prefix := "workitem/" + op + "/"
	n := len(prefix) + graphHashLen
	return func(s string) string {
		if len(s) <= n || s[n] != '/' || !strings.HasPrefix(s, prefix) {
			return ""
		}
		return s[:n]
	}
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

// ledgerScopes remembers, per command type, whether the cluster keys its
// ledger by tenant, so the service sends the scope the cluster's
// enabled version takes. It learns from the enabled set (a stale read:
// a local replica is enough, since a wrong guess costs one refusal that
// changes nothing) and corrects itself when the FSM refuses a scope
// (scopeRefused), then sends once more.
type ledgerScopes struct {
	mu    sync.Mutex
	keyed map[log.Type]bool // at most the three keyed command types
}

// tenantKeyed reports whether commands of type t should carry the
// tenant-keyed scope: what the service last learnt, else what the
// enabled set says (ungated state: version 1, not keyed), else, if the
// set cannot be read (no reader, or an error), not keyed, the scope
// every version before took, without learning it.
func (l *ledgerScopes) tenantKeyed(ctx context.Context, r fsm.Reader, t log.Type, from uint16) bool {
	l.mu.Lock()
	keyed, known := l.keyed[t]
	l.mu.Unlock()
	if known {
		return keyed
	}
	var v fsm.CapabilitiesView
	if r == nil || fsm.Ask(ctx, r, fsm.QueryCapabilities, true, struct{}{}, &v) != nil {
		return false
	}
	keyed = v.Gated && v.Enabled.Allows(t, from)
	l.learn(t, keyed)
	return keyed
}

func (l *ledgerScopes) learn(t log.Type, keyed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keyed == nil {
		l.keyed = map[log.Type]bool{}
	}
	l.keyed[t] = keyed
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
	keyed := s.scopes.tenantKeyed(ctx, s.r, env.Type, from)
	env.IdemScope = scopeFor(op, tenant, graph, keyed)
	replayed, err := s.propose(ctx, env, payload, out)
	if !scopeRefused(err) {
		return replayed, err
	}
	s.scopes.learn(env.Type, !keyed)
	env.IdemScope = scopeFor(op, tenant, graph, !keyed)
	return s.propose(ctx, env, payload, out)
}
