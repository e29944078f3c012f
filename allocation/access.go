package allocation

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// Who may do what. A space belongs to one tenant (its tenant_ref): reads
// need the reader role there, creates, windows, reservations, transitions
// and notes the member role, put, supersede and hold the controller role.
// The checks run inside Apply and queries, on the verified principal the
// leader stamped; the empty principal of an embedding host holds every
// role in every tenant.

// principalID is how a principal is recorded (created_by, note
// principal, supersession): its id; "" is the trusted embedding host
// (and every caller of a node without authentication).
func principalID(p identity.Principal) string { return p.ID }

// checkAccess requires role in tenant.
func checkAccess(p identity.Principal, tenant, role string) error {
	if !p.InTenant(tenant) || !p.HasRole(role) {
		return errs.Errorf(errs.CodeForbidden, "principal %q needs the %s role in tenant %q", p.ID, role, tenant)
	}
	return nil
}

// noSpace is the answer for a space that does not exist, and for a read
// of a space of another tenant: the same words, so that the answer tells
// a reader nothing about spaces it may not see.
func noSpace(slug string) error { return errs.Errorf(errs.CodeNotFound, "no space %q", slug) }

// spaceFor reads a space and requires role in its tenant. The copy it
// returns is the handler's: it may advance the id counters and write the
// row back; the catalog and bags it shares with the stored row are never
// changed.
//
// The order of the checks is what keeps other tenants' spaces hidden, as
// authority's authorize does: the role first (it does not depend on the
// space), then existence, then the tenant, where a reader outside it gets
// exactly the not_found of a slug no one has put. A write outside the
// tenant is forbidden instead: slugs are global, so a put of a taken slug
// has to be refused anyway, and a writer is told why.
func spaceFor(s fsm.Store, p identity.Principal, slug, role string) (*spaceRow, error) {
	if !p.HasRole(role) {
		return nil, lacksRole(p, role)
	}
	return spaceIn(s, p, slug, role)
}

// lacksRole refuses a principal without role.
func lacksRole(p identity.Principal, role string) error {
	return errs.Errorf(errs.CodeForbidden, "principal %q lacks the %s role", p.ID, role)
}

// spaceCommand is the typed shape of a command in a space (fsm.Typed):
// the payload validated by validate, then the role it needs, checked,
// as spaceFor does, before the space is read; its body reads the space
// with spaceIn, which checks the tenant (the space's, so no payload
// field names it).
func spaceCommand[P any](role string, validate func(*P) error, apply func(*fsm.Tx, *log.Command, *P) (any, error)) fsm.Typed[P] {
	return fsm.Typed[P]{
		Validate:  validate,
		Role:      role,
		Forbidden: func(p identity.Principal, _ *P) error { return lacksRole(p, role) },
		Apply:     apply,
	}
}

// spaceIn is spaceFor once the role held.
func spaceIn(s fsm.Store, p identity.Principal, slug, role string) (*spaceRow, error) {
	sp, err := getSpace(s, slug)
	if err != nil {
		return nil, err
	}
	if !p.InTenant(sp.Space.TenantRef) {
		if role == identity.RoleReader {
			return nil, noSpace(slug)
		}
		return nil, errs.Errorf(errs.CodeForbidden, "principal %q may not act in space %q's tenant %q", p.ID, slug, sp.Space.TenantRef)
	}
	cp := *sp
	return &cp, nil
}
