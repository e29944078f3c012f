package fsm_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

const cmdCredCheck log.Type = 950

// credModule declares credentials in commands from version 2 of its one
// command, as the access module does from principal_put 3.
func credModule() fsm.Module {
	return fsm.Module{
		Name:  "creds",
		Types: fsm.TypeRange{First: 950, Last: 959},
		Commands: []fsm.CommandSpec{{Type: cmdCredCheck, Name: "cred_check", MaxVersion: 2,
			Apply: func(*fsm.Tx, *log.Command) (any, error) { return nil, nil }}},
		Credentials: &fsm.CommandVersion{Type: cmdCredCheck, Version: 2},
	}
}

// A command that names its principal's credential while the cluster does
// not enable credentials (ungated, or enabled below the declared version)
// leaves every replica's state as a replica of an older binary leaves it,
// which cannot decode the field and refuses the entry as undecodable: the
// index moves, the clock does not (the command's stamp is ahead of it),
// nothing else changes. Once enabled, the same command applies.
func TestACredentialOutsideTheEnabledSetLeavesTheStateAnOlderBinaryLeaves(t *testing.T) {
	admin := identity.Principal{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin},
		Cred: identity.TokenCred(identity.HashToken("t"))}
	data, err := log.Encode(log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: 1 << 40, Principal: admin,
		Payload: log.MustMarshal(nodes.CreateCommand{NodeID: "a"})})
	if err != nil {
		t.Fatal(err)
	}
	// What an older binary meets: a principal key its decoder does not
	// know. This binary's decoder refuses the renamed key the same way.
	unknown := bytes.Replace(data, []byte("\xa4cred"), []byte("\xa4crex"), 1)
	if bytes.Equal(unknown, data) {
		t.Fatal("the encoded command holds no cred key")
	}
	served := fsm.ServedBy(nodes.Module(), credModule())
	for _, tc := range []struct {
		name    string
		enabled *fsm.Capabilities
		applies bool
	}{
		{"ungated", nil, false},
		{"enabled below the declared version", ptr(fsmtest.AtVersion(served, "creds", 1)), false},
		{"enabled at the declared version", &served, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newer := newFSMWith(t, nodes.Module(), credModule())
			older := newFSMWith(t, nodes.Module(), credModule())
			if tc.enabled != nil {
				enable(t, 1, *tc.enabled, newer, older)
			}
			if got := newer.CarriesCredentials(); got != tc.applies {
				t.Fatalf("CarriesCredentials = %v, want %v", got, tc.applies)
			}
			res := newer.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: data}).(*fsm.Response)
			if tc.applies {
				if res.Err != nil {
					t.Fatalf("enabled: %v, want the command applied", res.Err)
				}
				return
			}
			if errs.CodeOf(res.Err) != errs.CodeUnavailable || !strings.Contains(res.Err.Message, "credential") {
				t.Fatalf("not enabled: %v, want unavailable, naming the credential", res.Err)
			}
			if res := older.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: unknown}).(*fsm.Response); errs.CodeOf(res.Err) != errs.CodeInvalid {
				t.Fatalf("the older binary's stand-in: %v, want invalid (undecodable)", res.Err)
			}
			fsmtest.AssertSameState(t, newer, older)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// At most one module declares credentials, and only at a version of a
// command it serves.
func TestCredentialsDeclaredOnceAtAServedVersion(t *testing.T) {
	other := credModule()
	other.Name, other.Types = "creds2", fsm.TypeRange{First: 960, Last: 969}
	other.Commands = []fsm.CommandSpec{{Type: 960, Name: "cred_check2", MaxVersion: 2,
		Apply: func(*fsm.Tx, *log.Command) (any, error) { return nil, nil }}}
	other.Credentials = &fsm.CommandVersion{Type: 960, Version: 2}
	beyond := credModule()
	beyond.Credentials = &fsm.CommandVersion{Type: cmdCredCheck, Version: 3}
	foreign := credModule()
	foreign.Credentials = &fsm.CommandVersion{Type: nodes.CmdCreate, Version: 1}
	for name, modules := range map[string][]fsm.Module{
		"two modules":           {credModule(), other},
		"beyond MaxVersion":     {beyond},
		"another module's type": {nodes.Module(), foreign},
	} {
		if _, err := fsm.New(fsm.Config{Modules: modules}); err == nil {
			t.Errorf("%s: New accepted the declaration", name)
		}
	}
	if _, err := fsm.New(fsm.Config{Modules: []fsm.Module{credModule()}}); err != nil {
		t.Errorf("one module at a served version: %v", err)
	}
}
