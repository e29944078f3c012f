// Command arbiter runs and inspects Arbiter nodes: `arbiter --help` lists
// its commands and `arbiter <command> --help` says what each takes.
//
//	arbiter serve ...                      run a node
//	arbiter status | member | endpoint     the cluster, its members and their health
//	arbiter node create|get|cas|list|watch the node primitives
//	arbiter whoami                         the principal the credentials name
//	arbiter snapshot save|inspect|restore|verify FILE
//	arbiter recover | cert | principal     offline tools
//	arbiter <domain> ...                   concept, capacity, space, task, projection, workitem
//
// Client commands find the cluster with --addr or $ARBITER_ADDR
// (comma-separated; they move to the next address while one cannot be
// reached) and authenticate with --token, --token-file, --cert/--key or
// $ARBITER_TOKEN, $ARBITER_TOKEN_FILE, $ARBITER_CERT, $ARBITER_KEY; https
// URLs are checked against --ca or $ARBITER_CACERT. Results print as a
// table or, with -o json, as the API's JSON.
//
// With no flags, serve runs a single-node cluster in ./arbiter-data with
// raft on 127.0.0.1:7000 and the HTTP API on 127.0.0.1:8000, serving the
// built-in domains (package domain/builtin). With flags, a node with an
// empty data directory needs --bootstrap (a new cluster) or --join; a node
// with state resumes the membership its data directory records, and
// refuses to start with another --id, other addresses (unless
// --change-address), or a --join naming another cluster. A node removed
// from its cluster exits non-zero.
//
// Exit status: 0 done; 1 the call failed or was refused; 2 a wrong command
// line (nothing was sent); 3 decided and not done (node create found the
// node, node cas did not swap: the answer is printed all the same).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/arbiterhq/arbiter/errs"

	"golang.org/x/term"
)

func main() {
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		isTerminal: func() bool { return term.IsTerminal(int(os.Stderr.Fd())) }}
	os.Exit(a.run(os.Args[1:]))
}

// run runs the command line args and returns the exit status.
func (a *app) run(args []string) int {
	if a.isTerminal == nil {
		a.isTerminal = func() bool { return false }
	}
	if a.stdin == nil {
		a.stdin = eofReader{}
	}
	out := &countingWriter{w: a.stdout}
	a.stdout = out
	root := a.rootCommand()
	root.SetArgs(goStyleFlags(root, args))
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	status := exitStatus(err)
	if isCobraUsage(err) {
		status = exitUsage
	}
	// With -o json, a refusal by the cluster is printed as the API's
	// error body too (unless the command printed its answer), so a
	// script reads JSON either way.
	var apiErr *errs.Error
	if f := cmd.Flags().Lookup("output"); f != nil && f.Value.String() == "json" && out.n == 0 && errors.As(err, &apiErr) {
		_ = writeJSON(a.stdout, map[string]*errs.Error{"error": apiErr})
	}
	switch {
	case status == exitUsage:
		a.errorf("%s: %v\nsee '%s --help'\n", cmd.CommandPath(), err, cmd.CommandPath())
	case status != exitNotTaken || err.Error() != "":
		a.errorf("%s: %v\n", cmd.CommandPath(), err)
	}
	return status
}

func (a *app) errorf(format string, args ...any) {
	fmt.Fprintf(a.stderr, format, args...)
}

// countingWriter counts what a command printed.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
