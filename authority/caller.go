package authority

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
)

// The adapter checks the caller before it touches the graph: the principal
// on the context (set by the HTTP layer from a verified credential, or by
// an embedding host) must hold the role and the tenant, and an external
// caller's owner ref is the digest of its principal — derived when left
// empty, refused when it names someone else. The empty principal of an
// embedding host is trusted to name tenants and owners itself.

// authorize checks role and tenant. Reads answer not_found for another
// tenant, so that an error reveals nothing about it.
func authorize(ctx context.Context, role, tenant string) (identity.Principal, error) {
	p, _ := fsm.PrincipalFrom(ctx)
	if p.Trusted() {
		return p, nil
	}
	if !p.HasRole(role) {
		return p, errs.Errorf(errs.CodeForbidden, "principal %q lacks the %s role", p.ID, role)
	}
	if !p.InTenant(tenant) {
		if role == identity.RoleReader {
			return p, errs.New(errs.CodeNotFound, "no such reservation")
		}
		return p, errs.Errorf(errs.CodeForbidden, "principal %q may not act for tenant %q", p.ID, tenant)
	}
	return p, nil
}

// bindOwner fills an empty owner ref with the principal's digest and
// refuses any other.
func bindOwner(p identity.Principal, owner *string) error {
	if p.Trusted() {
		return nil
	}
	if *owner == "" {
		*owner = p.OwnerDigest()
	}
	if *owner != p.OwnerDigest() {
		return errs.Errorf(errs.CodeForbidden, "owner_ref must be the digest of principal %q (or empty)", p.ID)
	}
	return nil
}
