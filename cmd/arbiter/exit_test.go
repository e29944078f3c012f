package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/pflag"
)

// One exit rule for every command: 0 done, 1 the call failed, 2 the
// request is wrong and nothing was done, 3 decided and not done (every
// 409 answer). The rule is the README's and --help's.
func TestExitRule(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{usageErrorf("unknown flag"), exitUsage},
		{errs.New(errs.CodeInvalid, "updates is empty"), exitUsage},
		{errs.New(errs.CodeTooLarge, "body too large"), exitUsage},
		{notTaken{"node exists"}, exitNotTaken},
		{errs.New(errs.CodeConflict, "held by another request"), exitNotTaken},
		{errs.New(errs.CodeStaleFence, "fence moved"), exitNotTaken},
		{errs.New(errs.CodeExhausted, "no capacity"), exitNotTaken},
		{errs.New(errs.CodeIdempotencyConflict, "key reused"), exitNotTaken},
		{fmt.Errorf("task create: %w", &allocation.Conflict{Err: "allocation_conflict"}), exitNotTaken},
		{errs.New(errs.CodeNotFound, "no such node"), exitError},
		{errs.New(errs.CodeUnavailable, "no leader"), exitError},
		{errs.Unknown("timed out after sending"), exitError},
		{errs.New(errs.CodeForbidden, "needs admin"), exitError},
		{errs.New(errs.CodeInternal, "bug"), exitError},
		{errors.New("dial tcp: connection refused"), exitError},
	} {
		if got := exitStatus(tc.err); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	// A request refused before it is sent exits 2 as a bad flag does.
	dead := "http://" + deadAddr(t)
	for _, args := range [][]string{
		{"node", "cas", "x"},  // no update
		{"workitem", "hosts"}, // no --tenant
		{"workitem", "hosts", "--tenant", "t", "--limit", "0x"},
	} {
		if r := runCLI(t, nil, "", append(args, "--addr", dead)...); r.status != exitUsage {
			t.Errorf("%s: status %d, want %d (%s)", strings.Join(args, " "), r.status, exitUsage, r.stderr)
		}
	}
	// principal add|remove|rotate|list follow it too (TestPrincipalCommands).
	if r := runCLI(t, nil, "", "principal", "add", "x", "--tenant", "t", "--addr", "http://"+deadAddr(t)); r.status != exitUsage {
		t.Errorf("principal add without a role: status %d, want %d (%s)", r.status, exitUsage, r.stderr)
	}
}

// An argument a shell would split or expand is quoted in the retry
// command an unknown outcome prints.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"--space": "--space", "go-1f2e": "go-1f2e", "a b": "'a b'", "": "''", "it's": `'it'\''s'`, "$HOME": "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// A domain command's whole body is --filename (-f); --json, its earlier
// name, still sets it, hidden and deprecated: --json means -o json on
// every other command.
func TestBodyFlagNames(t *testing.T) {
	for _, args := range [][]string{{"--filename", "a.json"}, {"-f", "a.json"}, {"--json", "a.json"}} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		v := jsonFlag(fs)
		if err := fs.Parse(args); err != nil || *v != "a.json" {
			t.Fatalf("%v: %q %v", args, *v, err)
		}
		if f := fs.Lookup("json"); !f.Hidden || len(f.Annotations[deprecated]) == 0 {
			t.Fatalf("--json is not a hidden, deprecated alias")
		}
	}
}
