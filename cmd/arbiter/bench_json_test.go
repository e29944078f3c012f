package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// TestBenchCreateJSON drives the public JSON API with --op create-json,
// one client per node (so two of them go through a follower), and checks
// that a second run with the same ids counts each create that found its
// node as an error.
func TestBenchCreateJSON(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	env := map[string]string{"ARBITER_ADDR": strings.Join([]string{c.URL(0), c.URL(1), c.URL(2)}, ",")}
	bench := func() benchRun {
		t.Helper()
		r := runCLI(t, env, "", "bench", "--op", "create-json", "--clients", "3", "--duration", "300ms", "--warmup", "0s",
			"--value-bytes", "16", "--prefix", "json-bench", "--verify", "-o", "json")
		var runs []benchRun
		if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
			t.Fatalf("status %d, %v: %s %s", r.status, err, r.stdout, r.stderr)
		}
		return runs[0]
	}
	first := bench()
	if first.Ops == 0 || first.Errors != 0 || first.Op != "create-json" {
		t.Fatalf("first run: %+v", first)
	}
	// --verify read every acknowledged create back (no warmup: every
	// acknowledged call is a counted one).
	if first.Verified == nil || *first.Verified != first.Ops || first.Missing == nil || *first.Missing != 0 {
		t.Fatalf("first run's verification: %+v", first)
	}
	second := bench() // the same prefix, so each client's first ids exist
	if second.Errors == 0 || second.FirstErr != "id was not new" {
		t.Fatalf("second run: %+v", second)
	}
	// Nothing listens there: every operation fails, and so does bench.
	down := map[string]string{"ARBITER_ADDR": "http://127.0.0.1:1"}
	if r := runCLI(t, down, "", "bench", "--op", "create-json", "--clients", "2", "--duration", "200ms", "--warmup", "0s"); r.status != exitError ||
		!strings.Contains(r.stderr, "every operation failed in the run with 2 clients") {
		t.Fatalf("against a closed port: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "", "bench", "--op", "create-json", "--value-bytes", "1"); r.status != exitUsage {
		t.Fatalf("--value-bytes 1: status %d, %s", r.status, r.stderr)
	}
	if r := runCLI(t, env, "", "bench", "--op", "submit", "--verify"); r.status != exitUsage || !strings.Contains(r.stderr, "--verify reads back creates") {
		t.Fatalf("--verify of a submit: status %d, %s", r.status, r.stderr)
	}
}

// TestBenchCreateGo drives the light Go client (--op create-go), one
// client per node, and reads every acknowledged create back.
func TestBenchCreateGo(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	env := map[string]string{"ARBITER_ADDR": strings.Join([]string{c.URL(0), c.URL(1), c.URL(2)}, ",")}
	r := runCLI(t, env, "", "bench", "--op", "create-go", "--clients", "3", "--duration", "300ms", "--warmup", "0s",
		"--value-bytes", "16", "--prefix", "go-bench", "--verify", "-o", "json")
	var runs []benchRun
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("status %d, %v: %s %s", r.status, err, r.stdout, r.stderr)
	}
	got := runs[0]
	if got.Ops == 0 || got.Errors != 0 || got.Op != "create-go" || got.Verified == nil || *got.Verified != got.Ops || *got.Missing != 0 {
		t.Fatalf("run: %+v", got)
	}
}

// TestAnyMissingFailsBench: a run whose verification found a create
// missing ends bench with an error naming the count; runs without
// verification, or with nothing missing, do not.
func TestAnyMissingFailsBench(t *testing.T) {
	zero, one, many := 0, 1, 900
	if err := anyMissing([]benchRun{{Clients: 1}, {Clients: 64, Verified: &many, Missing: &zero}}); err != nil {
		t.Fatalf("nothing missing: %v", err)
	}
	err := anyMissing([]benchRun{{Clients: 1, Verified: &many, Missing: &zero}, {Clients: 64, Verified: &many, Missing: &one}})
	if err == nil || !strings.Contains(err.Error(), "1 of 900 read back missing") {
		t.Fatalf("one missing: %v", err)
	}
}

func TestErrorTextSaysOutcomeUnknown(t *testing.T) {
	unknown := errorText(errs.Unknown("leader %s: EOF", "n1"))
	if !strings.HasPrefix(unknown, "unavailable: leader n1: EOF") || !strings.Contains(unknown, "outcome unknown") {
		t.Fatalf("unknown outcome: %q", unknown)
	}
	if refused := errorText(errs.New(errs.CodeUnavailable, "no known leader")); refused != "unavailable: no known leader" {
		t.Fatalf("a refusal: %q", refused)
	}
}
