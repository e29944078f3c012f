package nodes

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
)

// Option configures the node primitives' module (Module, Domain, Embed).
type Option func(*access)

// AcceptAdapters lists the in-server adapters (log.Command.Adapter, set
// only by code inside a node: domain.Host.Adapter) that may use the raw
// node API for a caller who is not an admin, because the adapter checked
// the caller's tenant and role itself: the concept authority is one
// (domain/builtin lists it). A command or query marked with any other
// adapter needs the admin role, as one marked with none does. Without
// this option the module accepts no adapter.
//
// The list is part of the module's static configuration and Apply reads
// it: every replica must be built with the same list (domain/builtin
// gives every node the same), or replicas of one log decide differently.
// Never derive it from a flag or a file that could differ between nodes.
func AcceptAdapters(names ...string) Option {
	return func(a *access) {
		for _, n := range names {
			if n != "" && !slices.Contains(a.adapters, n) {
				a.adapters = append(a.adapters, n)
			}
		}
	}
}

// access guards the node primitives. They are the engine's native API
// and know nothing of tenants, so only an admin may use them directly; a
// tenant's caller reaches them through an in-server adapter the module
// lists, which checked its tenant and role first.
type access struct {
	adapters []string // the accepted adapters; a few, searched linearly
}

func newAccess(opts []Option) access {
	var a access
	for _, o := range opts {
		o(&a)
	}
	return a
}

// raw is nil when p, marked with adapter, may use the raw node API.
func (a access) raw(p identity.Principal, adapter string) error {
	if p.HasRole(identity.RoleAdmin) || (adapter != "" && slices.Contains(a.adapters, adapter)) {
		return nil
	}
	if adapter != "" {
		return errs.Errorf(errs.CodeForbidden, "the raw node API needs the admin role; adapter %q is not one the node primitives accept", adapter)
	}
	return errs.Errorf(errs.CodeForbidden, "the raw node API needs the admin role")
}
