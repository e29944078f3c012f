package access_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// A command meets the principal table as of its own log position: a
// principal a node stamped before its removal, or with tenants or roles
// the table has since cut, is refused inside Apply (forbidden), changing
// nothing, once the cluster enables version 2 of principal_put. Below it
// the command runs as stamped, as older versions ran it. A principal the
// table still grants what the command carries goes on.
func TestCommandsMeetTheTableAsOfTheirLogPosition(t *testing.T) {
	for _, v := range []uint16{1, 2} {
		t.Run(fmt.Sprintf("principal_put v%d", v), func(t *testing.T) {
			l, s := seededAt(t, v)
			put := func(by identity.Principal, id string, tenants []string, role string) error {
				_, err := s.Put(as(by), access.PutRequest{ID: id, Tenants: tenants, Roles: []string{role},
					TokenSHA256: []string{identity.HashToken(id + "-token")}, Replace: true})
				return err
			}
			// ops, an admin of every tenant, as every node stamps it now.
			ops := identity.Principal{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
			if err := put(superAdmin, "ops", ops.Tenants, identity.RoleAdmin); err != nil {
				t.Fatal(err)
			}
			if err := put(ops, "x1", []string{"a"}, identity.RoleReader); err != nil {
				t.Fatalf("ops while the table grants what it carries: %v", err)
			}
			stale := func(what string) {
				t.Helper()
				content := func() [32]byte {
					_, h, err := l.FSM.StateHashes()
					if err != nil {
						t.Fatal(err)
					}
					return h.Content
				}
				before := content()
				err := put(ops, "x2", []string{"a"}, identity.RoleReader)
				if v < 2 {
					if err != nil {
						t.Fatalf("%s, below version 2: %v, want the command run as stamped", what, err)
					}
					return
				}
				if !errors.Is(err, errs.Forbidden) {
					t.Fatalf("%s: %v, want forbidden", what, err)
				}
				if content() != before {
					t.Fatalf("%s: the refusal changed the state", what)
				}
			}
			// Its roles cut to reader: a node that lags still stamps admin.
			if err := put(superAdmin, "ops", ops.Tenants, identity.RoleReader); err != nil {
				t.Fatal(err)
			}
			stale("a role the table has cut")
			// Admin again, of tenant a only: a node stamps tenants "*".
			if err := put(superAdmin, "ops", []string{"a"}, identity.RoleAdmin); err != nil {
				t.Fatal(err)
			}
			stale("a tenant the table has cut")
			// Removed.
			if _, err := s.Remove(as(superAdmin), "ops"); err != nil {
				t.Fatal(err)
			}
			stale("a principal the table no longer holds")
		})
	}
}

// The credential that authenticated a principal never enters the log
// (identity.Principal.Cred: a member of an older binary could not decode
// a command that held it), so Apply neither sees nor checks it: a command
// proposed by a principal naming a token rotated away applies as one
// naming none. The leader refuses such a command before it proposes it
// (TestLaggingNodeCannotActForAnAuthorityTheLogTookAway); a linearizable
// read meets it in the query (TestLinearizableReadsMeetTheTable).
func TestTheCredentialNeverEntersTheLog(t *testing.T) {
	l, s := seededAt(t, checkedFrom)
	oldHash := identity.HashToken("ops-old")
	ops := identity.Principal{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
	if _, err := s.Put(as(superAdmin), access.PutRequest{ID: "ops", Tenants: ops.Tenants, Roles: ops.Roles,
		TokenSHA256: []string{identity.HashToken("ops-new")}}); err != nil {
		t.Fatal(err)
	}
	stale := ops
	stale.Cred = identity.TokenCred(oldHash)
	if _, err := s.Put(as(stale), access.PutRequest{ID: "x1", Tenants: []string{"a"}, Roles: []string{identity.RoleReader},
		TokenSHA256: []string{identity.HashToken("x1-token")}}); err != nil {
		t.Fatalf("a command whose principal names a credential, in Apply: %v, want it applied as without", err)
	}
	entries := l.Log()
	if last := entries[len(entries)-1]; bytes.Contains(last.Data, []byte(stale.Cred)) || bytes.Contains(last.Data, []byte("cred")) {
		t.Fatalf("entry %d holds the credential's name", last.Index)
	}
}

// A linearizable read meets the table as a command does: a principal the
// table has removed, or whose role the read needs was cut, or who names a
// token rotated away, is refused (forbidden) before the query runs. A
// stale read is answered as the node stands, unchecked. Below version 2
// of principal_put nothing is checked, as for commands.
func TestLinearizableReadsMeetTheTable(t *testing.T) {
	for _, v := range []uint16{1, 2} {
		t.Run(fmt.Sprintf("principal_put v%d", v), func(t *testing.T) {
			_, s := seededAt(t, v)
			oldHash := identity.HashToken("ops-old")
			ops := identity.Principal{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
			if _, err := s.Put(as(superAdmin), access.PutRequest{ID: "ops", Tenants: ops.Tenants, Roles: ops.Roles,
				TokenSHA256: []string{oldHash}}); err != nil {
				t.Fatal(err)
			}
			withOld := ops
			withOld.Cred = identity.TokenCred(oldHash)
			read := func(p identity.Principal, c fsm.Consistency) error {
				_, err := s.List(as(p), c)
				return err
			}
			if err := read(withOld, fsm.Linearizable); err != nil {
				t.Fatalf("a principal the table holds, with its token: %v", err)
			}
			if _, err := s.Rotate(as(superAdmin), access.RotateRequest{ID: "ops", TokenSHA256: []string{identity.HashToken("ops-new")}}); err != nil {
				t.Fatal(err)
			}
			want := func(what string, p identity.Principal, checkedFrom uint16) {
				t.Helper()
				err := read(p, fsm.Linearizable)
				switch {
				case v >= checkedFrom && !errors.Is(err, errs.Forbidden):
					t.Fatalf("%s, linearizable: %v, want forbidden", what, err)
				case v < checkedFrom && err != nil:
					t.Fatalf("%s, linearizable below version %d: %v, want the read answered", what, checkedFrom, err)
				}
				if err := read(p, fsm.Stale); err != nil {
					t.Fatalf("%s, stale: %v, want the read answered as the node stands", what, err)
				}
			}
			want("a token rotated away", withOld, 2)
			if err := read(ops, fsm.Linearizable); err != nil {
				t.Fatalf("the same principal naming no credential: %v", err)
			}
			if _, err := s.Put(as(superAdmin), access.PutRequest{ID: "ops", Tenants: ops.Tenants, Roles: []string{identity.RoleReader},
				TokenSHA256: []string{identity.HashToken("ops-new")}, Replace: true}); err != nil {
				t.Fatal(err)
			}
			want("a role the table has cut", ops, 2)
			if _, err := s.Remove(as(superAdmin), "ops"); err != nil {
				t.Fatal(err)
			}
			want("a principal the table no longer holds", ops, 2)
		})
	}
}

// seededAt is a local FSM whose cluster enables the access module at
// version v (at most) and holds the bootstrap file's table.
func seededAt(t *testing.T, v uint16) (*fsmtest.Local, *access.Service) {
	t.Helper()
	l, s := newLocal(t)
	if err := l.Enable(fsmtest.AtVersion(fsm.ServedBy(access.Module()), access.Name, v)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seed(context.Background(), bootstrapFile(0)); err != nil {
		t.Fatal(err)
	}
	return l, s
}

// checkedFrom is the version of principal_put from which commands meet
// the table inside Apply (the package's own constant).
const checkedFrom = 2
