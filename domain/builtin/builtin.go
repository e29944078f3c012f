package builtin

import (
	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/arbiterhq/arbiter/projection"
	"github.com/arbiterhq/arbiter/workitem"
)

// Domains returns fresh values of the built-in domains (each carries its
// own configuration, so two nodes in one process do not share it),
// configured by their flags or not at all.
func Domains() []domain.Domain { return With(Options{}) }

// Options configure the built-in domains from Go, for a host program that
// does not take flags.
type Options struct {
	// ConceptPolicies seed the cluster's replicated concept namespace
	// policy set when it has none, or when their version is newer (nil:
	// no seed until --concept-policies loads one).
	ConceptPolicies *authority.PolicySet
	// ProjectionRoot is the runtime root under which the node writes
	// hook projections ("": none until --projection-root names one).
	ProjectionRoot string
	// Access is the node's access control: its principals file and the
	// cluster's replicated principal table (nil: a fresh guard without a
	// file, which keeps and enforces the table but seeds nothing).
	Access *access.Guard
}

// With returns fresh values of the built-in domains configured by o.
func With(o Options) []domain.Domain {
	if o.Access == nil {
		o.Access = access.NewGuard()
	}
	return []domain.Domain{
		o.Access.Domain(),
		// The node primitives accept the concept authority's adapter in
		// place of the admin role. The list is the module's static
		// configuration, the same on every node (Apply reads it).
		nodes.Domain(nodes.AcceptAdapters(authority.Name)),
		authority.Domain(o.ConceptPolicies),
		capacity.Domain(),
		allocation.Domain(),
		projection.Domain(projection.WithRuntimeRoot(o.ProjectionRoot)),
		workitem.Domain(),
	}
}
