package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// benchJSON runs bench with args and -o json against env and returns its
// one run.
func benchJSON(t *testing.T, env map[string]string, args ...string) benchRun {
	t.Helper()
	r := runCLI(t, env, "", append(append([]string{"bench"}, args...), "-o", "json")...)
	var runs []benchRun
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("bench %v: status %d, %v: %s %s", args, r.status, err, r.stdout, r.stderr)
	}
	return runs[0]
}

// TestBenchDomainOps runs every op that measures one domain command, on
// one in-process 3-node cluster, two clients (one through a follower at
// least), and checks that each counted operations and no error: every
// op checks that its call did what it claims (a claim that claimed, a
// release that released), so an error here is an op that does not
// measure its command. The pool is far more than two clients can use
// in the run (2 clients on an in-process cluster, whose log is in memory,
// make at most about 3,000 calls a second).
func TestBenchDomainOps(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	env := map[string]string{"ARBITER_ADDR": strings.Join([]string{c.URL(0), c.URL(1), c.URL(2)}, ",")}
	for _, op := range []string{"claim", "complete", "hold-reserve", "hold-release", "task", "acquire", "release", "channel-submit", "publish"} {
		t.Run(op, func(t *testing.T) {
			// 1000 entries outlast 100 ms of any op, also without -race
			// (a run without it drained a pool of 400 hold releases).
			r := benchJSON(t, env, "--op", op, "--clients", "2", "--duration", "100ms", "--warmup", "0s", "--pool", "1000", "--prefix", "domains")
			if r.Op != op || r.Ops == 0 || r.Errors != 0 || r.P50Ms <= 0 {
				t.Fatalf("%+v", r)
			}
		})
	}
	// Each op's second run on the same cluster starts from what the first
	// left (targets, profile, hosts, config): it must work too.
	t.Run("publish-again", func(t *testing.T) {
		if r := benchJSON(t, env, "--op", "publish", "--clients", "2", "--duration", "150ms", "--warmup", "0s"); r.Ops == 0 || r.Errors != 0 {
			t.Fatalf("%+v", r)
		}
	})
}

// TestBenchPoolRunsOut: a pool hands each entry out once, and a run that
// drains it counts one error per client that found none left, saying
// so, rather than measuring calls that do nothing; the automatic pool is
// large enough.
func TestBenchPoolRunsOut(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	env := map[string]string{"ARBITER_ADDR": c.URL(0) + "," + c.URL(1)}
	r := benchJSON(t, env, "--op", "claim", "--clients", "2", "--duration", "400ms", "--warmup", "0s", "--pool", "5")
	if r.Ops != 5 || r.Errors != 2 || !strings.Contains(r.FirstErr, "the 5 entries the setup made ran out") {
		t.Fatalf("%+v", r)
	}
	// Without --pool, a calibration run sizes the pool: enough for the run.
	for _, clients := range []string{"1", "3"} {
		if r := benchJSON(t, env, "--op", "claim", "--clients", clients, "--duration", "300ms", "--warmup", "100ms"); r.Ops == 0 || r.Errors != 0 {
			t.Fatalf("a calibrated pool, %s clients: %+v", clients, r)
		}
	}
	if u := runCLI(t, env, "", "bench", "--op", "publish", "--clients", "257"); u.status != exitUsage {
		t.Fatalf("publish with 257 clients: status %d, %s", u.status, u.stderr)
	}
	if u := runCLI(t, env, "", "bench", "--op", "claim", "--pool", "-1"); u.status != exitUsage {
		t.Fatalf("--pool -1: status %d, %s", u.status, u.stderr)
	}
}
