package authority_test

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/domain"
)

// Each concept command lists, and takes, only its own flags (and those
// that reach a cluster): a flag of another command is refused before
// anything is sent, naming it.
func TestConceptCommandsTakeOnlyTheirFlags(t *testing.T) {
	run := func(args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		env := domain.CLIEnv{Stdout: &stdout, Stderr: &stderr, Connect: func(fs *flag.FlagSet) func() (domain.Conn, error) {
			fs.String("addr", "", "the cluster")
			return func() (domain.Conn, error) { return nil, errors.New("no cluster in this test") }
		}}
		err := authority.Domain(nil).CLI.Run(env, args)
		return stderr.String(), err
	}
	help, err := run("materialize", "--help")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("materialize --help: %v", err)
	}
	for _, want := range []string{"-fence", "-repo", "-reservation", "-addr"} {
		if !strings.Contains(help, want+" ") {
			t.Errorf("materialize --help does not list %s:\n%s", want, help)
		}
	}
	for _, other := range []string{"-action", "-after", "-namespace", "-ttl"} {
		if strings.Contains(help, other+" ") {
			t.Errorf("materialize --help lists %s, a flag of another command:\n%s", other, help)
		}
	}
	_, err = run("reserve", "--concept-id", "RMDD-1", "--action", "land", "--fence", "3")
	if err == nil || !strings.Contains(err.Error(), "does not take --action, --fence") {
		t.Fatalf("reserve with transition flags: %v, want a refusal naming them", err)
	}
	if _, err := run("no-such-command"); err == nil || !strings.Contains(err.Error(), `unknown concept command "no-such-command"`) {
		t.Fatalf("an unknown command: %v", err)
	}
}
