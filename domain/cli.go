package domain

import (
	"context"
	"flag"
	"io"

	"github.com/spf13/cobra"
)

// CLI is a domain's command in the arbiter binary: `arbiter <Name> ...`.
// A domain gives either Command (preferred) or Run.
type CLI struct {
	Name    string
	Summary string // one line for `arbiter --help`
	// Command builds the command as a cobra command named Name, with its
	// subcommands and typed flags. The binary adds the flags that reach
	// a cluster (--addr, --token, --ca, --cert, --key, with their
	// ARBITER_* environment defaults) and -o json|table to it as
	// persistent flags, so the command neither defines nor parses them:
	// it calls env.Dial to connect and env.Print to print a result.
	Command func(env CLIEnv) *cobra.Command
	// Run runs the command with the arguments after its name, parsing
	// them itself (with env.Connect for the cluster flags). It is the
	// older form, kept so that a domain not yet converted to Command
	// still works: the binary wraps it in a cobra command that passes
	// every argument through, and shows its usage for --help.
	Run func(env CLIEnv, args []string) error
}

// CLIEnv is what the binary gives a domain's command.
type CLIEnv struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Connect registers on fs the flags that reach a cluster (addresses,
	// credentials); once fs is parsed, the function it returns connects.
	// For Run.
	Connect func(fs *flag.FlagSet) func() (Conn, error)
	// Dial connects with the cluster flags the binary added to the
	// command (set once the command runs). For Command.
	Dial func() (Conn, error)
	// Print writes a result to Stdout as the -o flag asks: indented
	// JSON, or a table. For Command.
	Print func(v any) error
}

// Conn is a client's connection to a cluster's HTTP API (cluster.Remote
// is one). As a Backend it proposes and reads as the principal its
// credentials name.
type Conn interface {
	Backend
	// CallJSON sends body as JSON (nil: no body) with method to path,
	// trying the nodes in turn while one cannot be reached, and decodes
	// a 2xx answer into out (nil: ignored). An error answer becomes its
	// *errs.Error.
	CallJSON(ctx context.Context, method, path string, body, out any) error
}
