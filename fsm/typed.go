package fsm

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// Typed is the one shape of a command handler. A command declares once
// what it decodes its payload into (P), how P is validated, the role its
// principal needs and the tenant field it acts for, and Handle builds the
// Handler that enforces them around the body, as etcd's applier chain
// wraps every apply with its auth and quota checks: no handler repeats
// the prologue by hand.
//
// Handle runs these steps in this order; the first that fails answers
// the command, and nothing has been written then:
//
//  0. Guard, if set: access that depends on the principal and the
//     adapter alone, judged before the payload is even decoded (the
//     node primitives: an admin, or an adapter they accept).
//  1. Decode the payload into a fresh P: Decode if set (a size check
//     first, or a struct that depends on the enabled or the command's
//     version), DecodePayload otherwise (invalid).
//  2. Validate: P's own rule, the payload alone.
//  3. Checks, in order: what else must hold of the valid payload before
//     access is judged (a graph reference, an idempotency scope, a rule
//     that depends on the enabled version).
//  4. Access: the principal holds Role (identity.Principal.HasRole; ""
//     asks none) and may act for the tenant Tenant names
//     (Principal.InTenant), or for every tenant if AllTenants; otherwise
//     Forbidden's error, or a generic forbidden one. Then Access, if the
//     command's access is more than a role in a tenant.
//  5. Apply, the body, with the decoded payload.
//
// The order decides which error a command that breaks several rules
// gets, and that error reaches the caller and, inside a result that an
// idempotency ledger keeps (a window's entries, say), the state hash of
// every replica: a command whose prologue is converted to Typed
// keeps the order it had, so that a log replays as it was applied (the
// answer pins, TestAnswersPinned of each domain, hold the domains to
// that). A check that only some versions make is a Check that follows
// tx.EnabledVersion; one that must run after access stays in the body.
type Typed[P any] struct {
	// Guard, if set, is step 0 (see above): it returns the refusal.
	Guard func(tx *Tx) error
	// Decode, if set, decodes cmd's payload into p instead of
	// DecodePayload.
	Decode func(tx *Tx, cmd *log.Command, p *P) error
	// Validate, if set, is the payload's own rule (a method expression
	// such as (*acquireCmd).validate). If nil and *P has a method
	// Validate() error, that is the rule.
	Validate func(p *P) error
	// Checks run after Validate and before access, in order.
	Checks []func(tx *Tx, cmd *log.Command, p *P) error
	// Role is the role the principal needs ("": none).
	Role string
	// Tenant, if set, names the tenant the command acts for: the
	// principal must be in it.
	Tenant func(p *P) string
	// AllTenants asks for a principal of every tenant (tenants "*", or
	// the trusted principal of an embedding host).
	AllTenants bool
	// Forbidden, if set, is the refusal of a principal that lacks the
	// role or the tenant (its message names what the command needed).
	Forbidden func(who identity.Principal, p *P) error
	// Access, if set, judges what Role, Tenant and AllTenants cannot
	// say (a tenant or every tenant, depending on the payload; the
	// principal a field names; the adapter a command came through),
	// after they held. It returns the refusal.
	Access func(tx *Tx, p *P) error
	// Apply is the body.
	Apply func(tx *Tx, cmd *log.Command, p *P) (any, error)
}

// Validator is a payload that validates itself (see Typed.Validate).
type Validator interface {
	Validate() error
}

// Handle is the Handler of t (see Typed).
func Handle[P any](t Typed[P]) Handler {
	if t.Apply == nil { // a registration bug: every command answers it
		return func(*Tx, *log.Command) (any, error) {
			return nil, errs.New(errs.CodeInternal, "typed command without its Apply")
		}
	}
	return func(tx *Tx, cmd *log.Command) (any, error) {
		if t.Guard != nil {
			if err := t.Guard(tx); err != nil {
				return nil, err
			}
		}
		p := new(P)
		if err := t.decode(tx, cmd, p); err != nil {
			return nil, err
		}
		if err := t.validate(p); err != nil {
			return nil, err
		}
		for _, check := range t.Checks {
			if err := check(tx, cmd, p); err != nil {
				return nil, err
			}
		}
		if err := t.access(tx.Principal, p); err != nil {
			return nil, err
		}
		if t.Access != nil {
			if err := t.Access(tx, p); err != nil {
				return nil, err
			}
		}
		return t.Apply(tx, cmd, p)
	}
}

func (t *Typed[P]) decode(tx *Tx, cmd *log.Command, p *P) error {
	if t.Decode != nil {
		return t.Decode(tx, cmd, p)
	}
	return DecodePayload(cmd.Payload, p)
}

func (t *Typed[P]) validate(p *P) error {
	if t.Validate != nil {
		return t.Validate(p)
	}
	if v, ok := any(p).(Validator); ok {
		return v.Validate()
	}
	return nil
}

// access is step 4: role, then tenant, one refusal for either.
func (t *Typed[P]) access(who identity.Principal, p *P) error {
	ok := t.Role == "" || who.HasRole(t.Role)
	if ok && t.Tenant != nil {
		ok = who.InTenant(t.Tenant(p))
	}
	if ok && t.AllTenants {
		ok = InEveryTenant(who)
	}
	if ok {
		return nil
	}
	if t.Forbidden != nil {
		return t.Forbidden(who, p)
	}
	if t.Tenant != nil {
		return errs.Errorf(errs.CodeForbidden, "principal %q may not do this in tenant %q (needs role %q)", who.ID, t.Tenant(p), t.Role)
	}
	return errs.Errorf(errs.CodeForbidden, "principal %q may not do this (needs role %q)", who.ID, t.Role)
}

// InEveryTenant reports whether who may act for every tenant: the
// trusted principal of an embedding host, or one whose tenants are "*".
func InEveryTenant(who identity.Principal) bool {
	return who.Trusted() || slices.Contains(who.Tenants, "*")
}
