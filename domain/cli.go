package domain

import (
	"context"
	"flag"
	"io"
)

// CLI is a domain's command in the arbiter binary: `arbiter <Name> ...`.
type CLI struct {
	Name    string
	Summary string // one line for `arbiter help`
	// Run runs the command with the arguments after its name.
	Run func(env CLIEnv, args []string) error
}

// CLIEnv is what the binary gives a domain's command.
type CLIEnv struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Connect registers on fs the flags that reach a cluster (addresses,
	// credentials); once fs is parsed, the function it returns connects.
	Connect func(fs *flag.FlagSet) func() (Conn, error)
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
