package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// arbiter principal add|rotate|remove|list against a node whose file
// seeded the cluster's table: add makes a token, prints it once and it
// works at once; rotate and remove end the old one at once; the exit
// rule holds (3 for an id that exists, 1 for a member's try and an
// unknown id, 2 for a wrong command line); list shows no hash.
func TestPrincipalCommands(t *testing.T) {
	file := identity.File{Principals: []identity.PrincipalConfig{
		{ID: "root", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("cli-root")}},
		{ID: "agent", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}, TokenSHA256: []string{identity.HashToken("cli-agent")}},
	}}
	reg, err := identity.NewRegistry(file.Principals)
	if err != nil {
		t.Fatal(err)
	}
	guard := access.NewGuard()
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Principals: reg, Domains: func(int) []domain.Domain {
		if _, err := guard.SetFile(file); err != nil {
			t.Error(err)
		}
		return builtin.With(builtin.Options{Access: guard})
	}})
	if !c.Eventually(20*time.Second, func() bool { src, _ := guard.InForce(); return src == "table" }) {
		t.Fatal("the file did not seed the table")
	}
	run := func(token string, args ...string) cliRun {
		return runCLI(t, nil, "", append(args, "--addr", c.URL(0), "--token", token)...)
	}
	whoami := func(token string) int { return run(token, "whoami").status }

	add := run("cli-root", "principal", "add", "ops", "--tenant", "*", "--role", "admin", "-o", "json")
	if add.status != exitOK {
		t.Fatalf("add: %d %s", add.status, add.stderr)
	}
	var out struct {
		Token       string `json:"token"`
		TokenSHA256 string `json:"token_sha256"`
		Change      struct {
			Created bool `json:"created"`
		} `json:"change"`
	}
	if err := json.Unmarshal([]byte(add.stdout), &out); err != nil || out.Token == "" || !out.Change.Created || out.TokenSHA256 != identity.HashToken(out.Token) {
		t.Fatalf("add printed %s (%v)", add.stdout, err)
	}
	if got := whoami(out.Token); got != exitOK {
		t.Errorf("whoami with the new token: %d", got)
	}
	for _, tc := range []struct {
		name  string
		token string
		args  []string
		want  int
	}{
		{"an id that exists", "cli-root", []string{"principal", "add", "ops", "--tenant", "*", "--role", "admin"}, exitNotTaken},
		{"a member adds", "cli-agent", []string{"principal", "add", "x", "--tenant", "t", "--role", "reader"}, exitError},
		{"no --role", "cli-root", []string{"principal", "add", "x", "--tenant", "t"}, exitUsage},
		{"a bad hash", "cli-root", []string{"principal", "rotate", "ops", "--token-sha256", "abc"}, exitUsage},
		{"an unknown role", "cli-root", []string{"principal", "add", "x", "--tenant", "t", "--role", "owner"}, exitUsage},
		{"the last admin of every tenant... is not: ops is one too", "cli-root", []string{"principal", "list"}, exitOK},
	} {
		if r := run(tc.token, tc.args...); r.status != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.want, r.stderr)
		}
	}

	rot := run("cli-root", "principal", "rotate", "ops", "-o", "table")
	if rot.status != exitOK || !strings.Contains(rot.stdout, "shown once") {
		t.Fatalf("rotate: %d %s %s", rot.status, rot.stdout, rot.stderr)
	}
	if got := whoami(out.Token); got != exitError {
		t.Errorf("whoami with the rotated-out token: %d, want %d", got, exitError)
	}
	list := run("cli-root", "principal", "list", "-o", "table")
	if list.status != exitOK || !strings.Contains(list.stdout, "ops") || strings.Contains(list.stdout, identity.HashToken("cli-root")) {
		t.Errorf("list: %d\n%s", list.status, list.stdout)
	}
	if r := run("cli-root", "principal", "remove", "ops"); r.status != exitOK {
		t.Fatalf("remove: %d %s", r.status, r.stderr)
	}
	if r := run("cli-root", "principal", "remove", "ops"); r.status != exitError {
		t.Errorf("remove of an unknown id: %d, want %d", r.status, exitError)
	}
	if r := run("cli-root", "principal", "remove", "root"); r.status != exitNotTaken {
		t.Errorf("remove of the last admin of every tenant: %d, want %d (%s)", r.status, exitNotTaken, r.stderr)
	}
}
