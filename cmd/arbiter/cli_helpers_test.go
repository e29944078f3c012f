package main

import (
	"bytes"
	"strings"
	"testing"
)

// cliRun is one in-process run of the binary's command line.
type cliRun struct {
	stdout, stderr string
	status         int
}

// runCLI runs `arbiter args...` in this process, with env as its only
// environment and stdin as its standard input.
func runCLI(t testing.TB, env map[string]string, stdin string, args ...string) cliRun {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut,
		getenv: func(k string) string { return env[k] }}
	status := a.run(args)
	return cliRun{stdout: out.String(), stderr: errOut.String(), status: status}
}
