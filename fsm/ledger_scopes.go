package fsm

import (
	"context"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/log"
)

// Helpers for a domain whose keyed commands move to a tenant-keyed
// ledger (CommandSpec.LedgerTenant): the scope format the built-in
// domains share, and what a proposer needs to send the scope the
// cluster's enabled version takes.

// HashedScope is an idempotency scope format: Prefix (the domain and
// operation, "capacity/acquire/"), HashLen characters that name the
// request's graph and tenant in a fixed length (a digest), and, from the
// command's tenant-keyed version on, "/" and the tenant. Tenant and
// Legacy are a CommandSpec's LedgerTenant and LedgerLegacyScope for it.
type HashedScope struct {
	Prefix  string
	HashLen int
}

// Keyed is base, a scope of this format before the command's
// tenant-keyed version (Prefix and the HashLen characters), as a command
// carries it: followed by "/" and the tenant when keyed, the form Tenant
// and Legacy read back.
func (h HashedScope) Keyed(base, tenant string, keyed bool) string {
	if keyed {
		return base + "/" + tenant
	}
	return base
}

// Tenant reads the tenant out of a tenant-keyed scope: ok false for a
// scope of another prefix, or without "/" and a tenant of at least one
// byte after the hash. The handler checks the whole scope against its
// payload.
func (h HashedScope) Tenant(s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, h.Prefix)
	if !ok || len(rest) < h.HashLen+2 || rest[h.HashLen] != '/' {
		return "", false
	}
	return rest[h.HashLen+1:], true
}

// Legacy is the scope a request in a tenant-keyed scope carried before
// the tenant-keyed version (the scope without "/<tenant>"; "" for
// anything else), so that a retry across the switch finds its first
// attempt's row.
func (h HashedScope) Legacy(s string) string {
	n := len(h.Prefix) + h.HashLen
	if len(s) <= n || s[n] != '/' || !strings.HasPrefix(s, h.Prefix) {
		return ""
	}
	return s[:n]
}

// LedgerScopes remembers, per command type, whether the cluster keys its
// ledger by tenant, so that a service sends the scope the cluster's
// enabled version takes. It learns from the enabled set (a stale read:
// a local replica is enough, since a wrong guess costs one refusal that
// changes nothing) and corrects itself when the FSM refuses a scope
// (Send). The zero value is ready to use; it holds one entry per
// command type a service keys, a handful.
type LedgerScopes struct {
	mu    sync.Mutex
	keyed map[log.Type]bool
}

// TenantKeyed reports whether commands of type t should carry the
// tenant-keyed scope (t keys by tenant from version from on): what was
// last learnt, else what the enabled set says (ungated state: version 1,
// not keyed), else, if the set cannot be read (no reader, or an error),
// not keyed, the scope every version before took, without learning it.
func (l *LedgerScopes) TenantKeyed(ctx context.Context, r Reader, t log.Type, from uint16) bool {
	l.mu.Lock()
	keyed, known := l.keyed[t]
	l.mu.Unlock()
	if known {
		return keyed
	}
	var v CapabilitiesView
	if r == nil || Ask(ctx, r, QueryCapabilities, true, struct{}{}, &v) != nil {
		return false
	}
	keyed = v.Gated && v.Enabled.Allows(t, from)
	l.Learn(t, keyed)
	return keyed
}

// Learn records whether commands of type t take the tenant-keyed scope.
func (l *LedgerScopes) Learn(t log.Type, keyed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keyed == nil {
		l.keyed = map[log.Type]bool{}
	}
	l.keyed[t] = keyed
}

// Send sends a command of type t with the scope the cluster takes (send
// builds and proposes it, keyed or not) and, if refused says the cluster
// refused that scope (the enabled version moved since it was learnt),
// learns the other and sends once more: at most two proposals.
func (l *LedgerScopes) Send(ctx context.Context, r Reader, t log.Type, from uint16, refused func(error) bool, send func(keyed bool) error) error {
	keyed := l.TenantKeyed(ctx, r, t, from)
	err := send(keyed)
	if !refused(err) {
		return err
	}
	l.Learn(t, !keyed)
	return send(!keyed)
}
