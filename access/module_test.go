package access_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

var (
	superAdmin = identity.Principal{ID: "root", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
	// tenantAdmin is an admin of one tenant only: not enough to change
	// the cluster's principals.
	tenantAdmin = identity.Principal{ID: "a-admin", Tenants: []string{"a"}, Roles: []string{identity.RoleAdmin}}
	member      = identity.Principal{ID: "m", Tenants: []string{"*"}, Roles: []string{identity.RoleMember}}
)

func pc(id string, tenants, roles []string, token string) identity.PrincipalConfig {
	return identity.PrincipalConfig{ID: id, Tenants: tenants, Roles: roles, TokenSHA256: []string{identity.HashToken(token)}}
}

// bootstrapFile is a file with a super admin and a member.
func bootstrapFile(version uint64) *identity.File {
	return &identity.File{FileVersion: version, Principals: []identity.PrincipalConfig{
		pc("root", []string{"*"}, []string{identity.RoleAdmin}, "root-token"),
		pc("app", []string{"a"}, []string{identity.RoleMember}, "app-token"),
	}}
}

func newLocal(t *testing.T) (*fsmtest.Local, *access.Service) {
	t.Helper()
	l, err := fsmtest.New(access.Module())
	if err != nil {
		t.Fatal(err)
	}
	return l, access.NewService(l, l)
}

func as(p identity.Principal) context.Context { return fsm.WithPrincipal(context.Background(), p) }

func ids(t *testing.T, s *access.Service) string {
	t.Helper()
	res, err := s.List(as(superAdmin), fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range res.Principals {
		out = append(out, p.ID)
	}
	return strings.Join(out, ",")
}

// A principal without the admin role for every tenant changes nothing:
// every change is forbidden inside Apply (the service's checks are not
// the authority), and the state hash stays the same.
func TestNonAdminCannotChangePrincipals(t *testing.T) {
	l, s := newLocal(t)
	if _, err := s.Seed(context.Background(), bootstrapFile(0)); err != nil {
		t.Fatal(err)
	}
	accessTables := func(table string) bool { return strings.HasPrefix(table, "access_") }
	before := fsmtest.ReadStored(t, l.FSM).Digest(accessTables)
	for _, p := range []identity.Principal{member, tenantAdmin} {
		ctx := as(p)
		calls := map[string]func() error{
			"put": func() error {
				_, err := s.Put(ctx, access.PutRequest{ID: "evil", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("evil")}})
				return err
			},
			"remove": func() error { _, err := s.Remove(ctx, "root"); return err },
			"rotate": func() error {
				_, err := s.Rotate(ctx, access.RotateRequest{ID: "root", TokenSHA256: []string{identity.HashToken("mine")}})
				return err
			},
			"seed": func() error { _, err := s.Seed(ctx, bootstrapFile(9)); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, errs.Forbidden) {
				t.Errorf("%s as %s: %v, want forbidden", name, p.ID, err)
			}
		}
	}
	if after := fsmtest.ReadStored(t, l.FSM).Digest(accessTables); after != before {
		t.Error("a refused change changed the state")
	}
	if got := ids(t, s); got != "app,root" {
		t.Errorf("principals %s, want app,root", got)
	}
	if _, err := s.List(as(member), fsm.Linearizable); !errors.Is(err, errs.Forbidden) {
		t.Errorf("list as a member: %v, want forbidden", err)
	}
}

// The file-versus-table rule inside Apply: a file seeds a cluster with no
// table; a seed of the same (or a lower) file_version keeps a table an
// admin changed; a higher one replaces it.
func TestSeedRule(t *testing.T) {
	_, s := newLocal(t)
	ctx := as(superAdmin)
	if _, err := s.Put(ctx, access.PutRequest{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("ops")}}); !errors.Is(err, errs.Conflict) {
		t.Fatalf("put before any table: %v, want conflict", err)
	}
	res, err := s.Seed(context.Background(), bootstrapFile(1))
	if err != nil || !res.Applied || res.Count != 2 || res.Source != access.SourceFile {
		t.Fatalf("first seed: %+v %v", res, err)
	}
	if _, err := s.Put(ctx, access.PutRequest{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("ops")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint64{0, 1} {
		res, err = s.Seed(context.Background(), bootstrapFile(v))
		if err != nil || res.Applied || res.Source != access.SourceAdmin || res.FileVersion != 1 {
			t.Fatalf("seed of file_version %d after an admin's change: %+v %v, want kept", v, res, err)
		}
		if res.Digest == access.Digest(bootstrapFile(v).Principals) {
			t.Error("the kept table has the file's digest")
		}
	}
	if got := ids(t, s); got != "ops,root" {
		t.Fatalf("after seeds that must not apply: %s, want ops,root", got)
	}
	res, err = s.Seed(context.Background(), bootstrapFile(2))
	if err != nil || !res.Applied || res.FileVersion != 2 {
		t.Fatalf("seed of a higher file_version: %+v %v", res, err)
	}
	if got := ids(t, s); got != "app,root" {
		t.Fatalf("after a higher file_version: %s, want app,root", got)
	}
	if res.Digest != access.Digest(bootstrapFile(2).Principals) {
		t.Error("the seeded table's digest is not the file's")
	}
}

// Changes through the API are checked as a whole table: no shared
// credential, no duplicate, and never the last admin of every tenant.
func TestChangesKeepTheTableUsable(t *testing.T) {
	_, s := newLocal(t)
	ctx := as(superAdmin)
	if _, err := s.Seed(context.Background(), bootstrapFile(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(ctx, "root"); !errors.Is(err, errs.Conflict) {
		t.Errorf("removing the last admin of every tenant: %v, want conflict", err)
	}
	if _, err := s.Put(ctx, access.PutRequest{ID: "root", Tenants: []string{"a"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("x")}, Replace: true}); !errors.Is(err, errs.Conflict) {
		t.Errorf("demoting the last admin of every tenant: %v, want conflict", err)
	}
	if _, err := s.Put(ctx, access.PutRequest{ID: "app", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{identity.HashToken("y")}}); !errors.Is(err, errs.Conflict) {
		t.Errorf("adding an id that exists without replace: %v, want conflict", err)
	}
	if _, err := s.Put(ctx, access.PutRequest{ID: "thief", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{identity.HashToken("app-token")}}); !errors.Is(err, errs.Invalid) {
		t.Errorf("a credential another principal holds: %v, want invalid", err)
	}
	if _, err := s.Put(ctx, access.PutRequest{ID: "bad", Tenants: []string{"a"}, Roles: []string{"owner"}, TokenSHA256: []string{identity.HashToken("z")}}); !errors.Is(err, errs.Invalid) {
		t.Errorf("an unknown role: %v, want invalid", err)
	}
	if _, err := s.Remove(ctx, "ghost"); !errors.Is(err, errs.NotFound) {
		t.Errorf("removing an unknown principal: %v, want not_found", err)
	}
	// A second admin of every tenant makes the first removable.
	if _, err := s.Put(ctx, access.PutRequest{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("ops")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(ctx, "root"); err != nil {
		t.Errorf("removing one of two admins: %v", err)
	}
	res, err := s.Rotate(ctx, access.RotateRequest{ID: "ops", TokenSHA256: []string{identity.HashToken("ops-2")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := access.Fingerprint(identity.HashToken("ops-2")); len(res.Principal.Tokens) != 1 || res.Principal.Tokens[0] != want {
		t.Errorf("rotated tokens %v, want [%s]", res.Principal.Tokens, want)
	}
}

// The API never shows a hash: the list has fingerprints of 8 hex
// digits.
func TestListShowsNoHash(t *testing.T) {
	_, s := newLocal(t)
	if _, err := s.Seed(context.Background(), bootstrapFile(0)); err != nil {
		t.Fatal(err)
	}
	res, err := s.List(as(superAdmin), fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Configured || len(res.Principals) != 2 {
		t.Fatalf("list: %+v", res)
	}
	for _, p := range res.Principals {
		for _, fp := range p.Tokens {
			if len(fp) != len("sha256:")+8 {
				t.Errorf("%s: token shown as %q, want a fingerprint of 8 hex digits", p.ID, fp)
			}
		}
	}
}

// A cluster that does not enable access control yet (a member still runs
// a binary without it) applies none of its commands, on any replica: the
// seed is refused as unavailable (the node retries it) and changes
// nothing.
func TestCommandsWaitForTheClusterToEnableThem(t *testing.T) {
	l, s := newLocal(t)
	if err := l.Enable(fsm.ServedBy()); err != nil { // the core only
		t.Fatal(err)
	}
	if _, err := s.Seed(context.Background(), bootstrapFile(0)); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("seed before the cluster enables access: %v, want unavailable", err)
	}
	if err := l.Enable(fsm.ServedBy(access.Module())); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Seed(context.Background(), bootstrapFile(0)); err != nil || !res.Applied {
		t.Fatalf("seed once enabled: %+v %v", res, err)
	}
}
