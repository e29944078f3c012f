package fsm_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// typedPayload validates itself (fsm.Validator).
type typedPayload struct {
	Tenant string `msgpack:"tenant"`
	N      int    `msgpack:"n"`
}

func (p *typedPayload) Validate() error {
	if p.Tenant == "" {
		return errs.New(errs.CodeInvalid, "tenant is required")
	}
	return nil
}

const (
	cmdTyped      log.Type = 950
	cmdTypedFleet log.Type = 951
	// cmdTypedGuarded is judged before its payload is decoded.
	cmdTypedGuarded log.Type = 952
)

// typedModule has a command of every prologue step: a check that n is
// not 13, the member role in the payload's tenant, an access check of
// its own (666: the trusted host only); and one that asks
// the controller role in every tenant with its own refusal.
func typedModule() fsm.Module {
	echo := func(_ *fsm.Tx, _ *log.Command, p *typedPayload) (any, error) { return p.N, nil }
	unlucky := func(_ *fsm.Tx, _ *log.Command, p *typedPayload) error {
		if p.N == 13 {
			return errs.New(errs.CodeConflict, "unlucky")
		}
		return nil
	}
	return fsm.Module{
		Name:  "typed",
		Types: fsm.TypeRange{First: 950, Last: 959},
		Commands: []fsm.CommandSpec{
			{Type: cmdTyped, Name: "typed", MaxVersion: 1, Apply: fsm.Handle(fsm.Typed[typedPayload]{
				Checks: []func(*fsm.Tx, *log.Command, *typedPayload) error{unlucky},
				Role:   identity.RoleMember,
				Tenant: func(p *typedPayload) string { return p.Tenant },
				Access: func(tx *fsm.Tx, p *typedPayload) error {
					if p.N == 666 && tx.Principal.ID != "" {
						return errs.New(errs.CodeForbidden, "the trusted host only")
					}
					return nil
				},
				Apply: echo,
			})},
			{Type: cmdTypedGuarded, Name: "typed_guarded", MaxVersion: 1, Apply: fsm.Handle(fsm.Typed[typedPayload]{
				Guard: func(tx *fsm.Tx) error {
					if tx.Adapter != "in-server" {
						return errs.New(errs.CodeForbidden, "in-server only")
					}
					return nil
				},
				Apply: echo,
			})},
			{Type: cmdTypedFleet, Name: "typed_fleet", MaxVersion: 1, Apply: fsm.Handle(fsm.Typed[typedPayload]{
				Role:       identity.RoleController,
				AllTenants: true,
				Forbidden: func(who identity.Principal, _ *typedPayload) error {
					return errs.Errorf(errs.CodeForbidden, "%s is not the fleet", who.ID)
				},
				Apply: echo,
			})},
		},
	}
}

// TestTypedRunsTheSteps holds Handle to its order: Guard, decode, Validate,
// Checks, access (role, tenant or every tenant, then Access), body; the
// first failure answers.
func TestTypedRunsTheSteps(t *testing.T) {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{typedModule()}})
	if err != nil {
		t.Fatal(err)
	}
	member := identity.Principal{ID: "m", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}}
	reader := identity.Principal{ID: "r", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}}
	fleet := identity.Principal{ID: "f", Tenants: []string{"*"}, Roles: []string{identity.RoleController}}
	ctlA := identity.Principal{ID: "c", Tenants: []string{"a"}, Roles: []string{identity.RoleController}}
	good := log.MustMarshal(typedPayload{Tenant: "a", N: 7})
	for _, c := range []struct {
		name    string
		typ     log.Type
		who     identity.Principal
		adapter string
		payload []byte
		code    errs.Code
		message string
	}{
		{"undecodable", cmdTyped, reader, "", []byte{0xc1}, errs.CodeInvalid, ""},
		{"invalid before unlucky and forbidden", cmdTyped, reader, "", log.MustMarshal(typedPayload{N: 13}), errs.CodeInvalid, "tenant is required"},
		{"check before access", cmdTyped, reader, "", log.MustMarshal(typedPayload{Tenant: "a", N: 13}), errs.CodeConflict, "unlucky"},
		{"role", cmdTyped, reader, "", good, errs.CodeForbidden, `principal "r" may not do this in tenant "a" (needs role "member")`},
		{"tenant", cmdTyped, member, "", log.MustMarshal(typedPayload{Tenant: "b"}), errs.CodeForbidden, `principal "m" may not do this in tenant "b" (needs role "member")`},
		{"access after role and tenant", cmdTyped, member, "", log.MustMarshal(typedPayload{Tenant: "a", N: 666}), errs.CodeForbidden, "the trusted host only"},
		{"role before access", cmdTyped, reader, "", log.MustMarshal(typedPayload{Tenant: "a", N: 666}), errs.CodeForbidden, `principal "r" may not do this in tenant "a" (needs role "member")`},
		{"member in its tenant", cmdTyped, member, "", good, "", ""},
		{"trusted", cmdTyped, identity.Principal{}, "", good, "", ""},
		{"not every tenant", cmdTypedFleet, ctlA, "", good, errs.CodeForbidden, "c is not the fleet"},
		{"the fleet", cmdTypedFleet, fleet, "", good, "", ""},
		{"guard before decode", cmdTypedGuarded, identity.Principal{}, "", []byte{0xc1}, errs.CodeForbidden, "in-server only"},
		{"decode after the guard", cmdTypedGuarded, identity.Principal{}, "in-server", []byte{0xc1}, errs.CodeInvalid, ""},
		{"guarded", cmdTypedGuarded, reader, "in-server", good, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := log.Encode(log.Command{Type: c.typ, Version: 1, Principal: c.who, Adapter: c.adapter, Payload: c.payload})
			if err != nil {
				t.Fatal(err)
			}
			res := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Type: raft.LogCommand, Data: data}).(*fsm.Response)
			if c.code == "" {
				var n int
				if res.Err != nil || log.Unmarshal(res.Result, &n) != nil || n != 7 {
					t.Fatalf("got %v %x, want 7", res.Err, res.Result)
				}
				return
			}
			if res.Err == nil || res.Err.Code != c.code || (c.message != "" && res.Err.Message != c.message) {
				t.Fatalf("got %v, want %s %q", res.Err, c.code, c.message)
			}
		})
	}
}
