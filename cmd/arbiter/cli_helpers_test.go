package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
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

// deadAddr is a loopback host:port nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// lastSeqOf is the newest change-feed sequence of the node at base.
func lastSeqOf(t testing.TB, base string) uint64 {
	t.Helper()
	resp, err := http.Get(base + "/v1/changes?after=0&limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		LastSeq uint64 `json:"last_seq"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page.LastSeq
}
