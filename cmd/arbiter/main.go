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
	a.args = args
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
		a.errorf("%s: %s\n", cmd.CommandPath(), errorText(err))
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
