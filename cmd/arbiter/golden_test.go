package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from what the commands print")

// volatile are the fields whose values change from run to run (log
// indexes, times, terms, addresses, hashes, ids the cluster draws, who
// leads): a golden file holds "<volatile>" for them.
var volatile = map[string]bool{
	"created_index": true, "modified_index": true, "index": true, "applied_index": true, "commit_index": true,
	"term": true, "last_log_index": true, "last_snapshot_index": true, "last_snapshot_term": true,
	"seq": true, "next": true, "last_seq": true, "time_ms": true, "now_ms": true, "fsm_time_ms": true,
	"acquired_at_ms": true, "expires_at_ms": true, "created_at_ms": true, "updated_at_ms": true, "took_ms": true,
	"bytes": true, "rows": true, "data_dir_bytes": true, "snapshot_bytes": true, "last_snapshot_bytes": true, "snapshot_restores": true,
	"last_contact_seconds": true, "lag_entries": true, "cluster_id": true, "leader_id": true, "leader_api_addr": true,
	"state": true, "leader": true, "is_leader": true, "node_id_answering": true,
	"hash": true, "content_hash": true, "data_hash": true, "state_hash": true, "backup_data_hash": true,
	"token": true, "token_sha256": true, "cert_sha256": true, "revision": true, "time": true, "go_version": true,
	"platform": true, "module": true, "epoch": true, "cell_epoch": true, "last_fence": true, "fence_token": true,
	"lease_epoch": true, "lease_id": true, "ops": true, "ops_per_sec": true, "p50_ms": true, "p99_ms": true,
	"p999_ms": true, "client_cpu_us": true, "errors": true, "backup_index": true, "runs": true, "failures": true, "ended_at_ms": true,
}

// portRE finds loopback addresses, whose ports are drawn per run.
var portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// indexRE finds log indexes in messages.
var indexRE = regexp.MustCompile(`index \d+`)

func normalize(v any, tmp string) any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["data_hash"]; ok {
			if _, ok := x["id"]; ok {
				x["id"] = "<volatile>" // snapshot verify's node: the leader
			}
		}
		for k, val := range x {
			switch {
			case k == "properties":
				// A node's own fields are golden but those set to the
				// log's time (--set-now at=0).
				if props, ok := val.(map[string]any); ok {
					if _, ok := props["at"]; ok {
						props["at"] = "<volatile>"
					}
				}
			case volatile[k]:
				x[k] = "<volatile>"
			case k == "version":
				if _, ok := val.(string); ok {
					x[k] = "<volatile>"
				}
			default:
				x[k] = normalize(val, tmp)
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalize(x[i], tmp)
		}
		return x
	case string:
		x = strings.ReplaceAll(x, tmp, "TMP")
		return portRE.ReplaceAllString(x, "127.0.0.1:PORT")
	}
	return v
}

// golden is one command's recorded run.
type golden struct {
	Args   []string `json:"args"`
	Status int      `json:"status"`
	Output any      `json:"output"`
	Stderr string   `json:"stderr,omitempty"`
}

// goldenRunner runs commands with -o json against a cluster and compares
// what they print, normalized, with testdata/golden/NAME.json.
type goldenRunner struct {
	t    *testing.T
	env  map[string]string
	tmp  string
	seen map[string]bool
}

func (g *goldenRunner) run(name, stdin string, args ...string) any {
	g.t.Helper()
	if g.seen[name] {
		g.t.Fatalf("golden %s used twice", name)
	}
	g.seen[name] = true
	args = append(args, "-o", "json")
	r := runCLI(g.t, g.env, stdin, args...)
	var out any
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	if r.stdout == "" {
		out = nil
	} else if len(lines) > 1 && strings.HasPrefix(lines[1], "{") { // JSON lines (node watch)
		var all []any
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				g.t.Fatalf("%s: %v\n%s", name, err, r.stdout)
			}
			all = append(all, v)
		}
		out = all
	} else if err := dec.Decode(&out); err != nil {
		g.t.Fatalf("%s (arbiter %s): not JSON: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, r.stdout, r.stderr)
	}
	// What the caller parses, before normalize rewrites it.
	raw, _ := json.Marshal(out)
	var parsed any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	_ = d.Decode(&parsed)
	shownArgs := make([]string, len(args))
	for i, a := range args {
		shownArgs[i] = portRE.ReplaceAllString(strings.ReplaceAll(a, g.tmp, "TMP"), "127.0.0.1:PORT")
		if i > 0 && (args[i-1] == "--after" || args[i-1] == "--lease") {
			shownArgs[i] = "<volatile>"
		}
	}
	got, err := json.MarshalIndent(golden{Args: shownArgs, Status: r.status, Output: normalize(out, g.tmp), Stderr: indexRE.ReplaceAllString(normalize(r.stderr, g.tmp).(string), "index N")}, "", "  ")
	if err != nil {
		g.t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			g.t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			g.t.Fatal(err)
		}
		return parsed
	}
	want, err := os.ReadFile(path)
	if err != nil {
		g.t.Fatalf("%s: %v (go test ./cmd/arbiter -run TestGoldenJSON -update writes it)", name, err)
	}
	if !bytes.Equal(got, want) {
		g.t.Errorf("arbiter %s: -o json differs from %s (stderr %q)\n--- got\n%s\n--- want\n%s", strings.Join(args, " "), path, r.stderr, got, want)
	}
	return parsed
}

// field walks a parsed answer: field(v, "node", "version").
func field(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// Every client command's -o json against a live three-node cluster, in
// process, compared with golden files (go test -run TestGoldenJSON
// -update rewrites them). $ARBITER_ADDR lists a dead address first: every
// command moves on to a live node.
func TestGoldenJSON(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	tmp := t.TempDir()
	addrs := []string{"http://" + deadAddr(t)}
	for i := range c.Size() {
		addrs = append(addrs, c.URL(i))
	}
	g := &goldenRunner{t: t, tmp: tmp, seen: map[string]bool{}, env: map[string]string{"ARBITER_ADDR": strings.Join(addrs, ",")}}

	g.run("version", "", "version")
	g.run("whoami", "", "whoami")
	g.run("status", "", "status")
	g.run("endpoint-status", "", "endpoint", "status", "--cluster")
	g.run("endpoint-health", "", "endpoint", "health", "--cluster", "--wait=20s")
	g.run("member-list", "", "member", "list")

	// The node primitives, and the change feed's events with values.
	before := field(g.run("node-list-empty", "", "node", "list", "--label", "concept"), "next_cursor")
	if before != "" {
		t.Fatalf("an empty list has a cursor: %v", before)
	}
	seq := lastSeqOf(t, c.URL(0))
	g.run("node-create", "", "node", "create", "RMDD-27", "--label", "concept", "--prop", "owner=host-a", "--prop", "fence=1")
	g.run("node-create-exists", "", "node", "create", "RMDD-27", "--prop", "owner=host-b")
	g.run("node-get", "", "node", "get", "RMDD-27")
	g.run("node-cas", "", "node", "cas", "RMDD-27", "--if", "fence=1", "--set", "fence=2", "--set", "state=materialized", "--set-now", "at=0")
	g.run("node-cas-refused", "", "node", "cas", "RMDD-27", "--if", "fence=1", "--if-absent", "owner", "--set", "state=stolen")
	g.run("node-create-second", "", "node", "create", "RMDD-28", "--label", "concept", "--props", `{"owner":"host-b","fence":1}`)
	g.run("node-list", "", "node", "list", "--label", "concept", "--limit", "1")
	g.run("node-list-all", "", "node", "list", "--label", "concept", "--all")
	g.run("node-watch", "", "node", "watch", "--after", fmt.Sprint(seq), "--count", "3")
	g.run("node-get-missing", "", "node", "get", "RMDD-99")

	// A member that never started is added, is not healthy, and goes.
	dead := deadAddr(t)
	g.run("member-add", "", "member", "add", "n9", "--raft-addr", deadAddr(t), "--api-addr", dead)
	list := g.run("member-list-dead", "", "member", "list")
	for _, m := range field(list, "members").([]any) {
		if field(m, "id") == "n9" && (field(m, "healthy") != false || field(m, "reachable") != false) {
			t.Errorf("a member that never started looks healthy: %v", m)
		}
	}
	g.run("member-remove", "", "member", "remove", "n9")

	// Credentials tools.
	g.run("principal-new-token", "", "principal", "new-token")
	g.run("principal-hash-token", "s3cret\n", "principal", "hash-token")
	certs := filepath.Join(tmp, "certs")
	g.run("cert-ca", "", "cert", "ca", "--dir", certs)
	g.run("cert-node", "", "cert", "node", "--id", "n1", "--dir", certs)
	g.run("cert-client", "", "cert", "client", "--principal", "ops", "--dir", certs)

	// Capacity with typed flags (open mode: the owner is named).
	g.run("capacity-cells", "", "capacity", "cells", "--tenant", "acme", "--cell", "gpu-1", "--capacity", "gpu=8")
	acq := g.run("capacity-acquire", "", "capacity", "acquire", "--tenant", "acme", "--work-item", "w-1", "--demand", "gpu-1:gpu:2",
		"--ttl", "10m", "--idempotency-key", "k1", "--owner", "agent-7")
	g.run("capacity-acquire-trusted-needs-owner", "", "capacity", "acquire", "--tenant", "acme", "--work-item", "w-2", "--demand", "gpu-1:gpu:1", "--idempotency-key", "k2")
	g.run("capacity-status", "", "capacity", "status", "--tenant", "acme")
	lease := field(acq, "leases").([]any)[0]
	ref := fmt.Sprintf("%v:%v:%v", field(lease, "lease_id"), field(lease, "lease_epoch"), field(lease, "fence_token"))
	g.run("capacity-release", "", "capacity", "release", "--tenant", "acme", "--lease", ref, "--owner", "agent-7")
	g.run("capacity-json", "", "capacity", "reclaim", "--filename", `{"schema_version":"1","tenant_ref":"acme","max_count":10}`)

	// The work-item commands, built like the core ones.
	g.run("workitem-list", "", "workitem", "list", "--tenant", "t1")

	// Concepts and allocation with typed flags (the writes come after
	// the backups, which list the tables written).
	g.run("concept-list", "", "concept", "list", "--tenant", "t1")
	g.run("concept-policies", "", "concept", "policies")
	g.run("space-get-missing", "", "space", "get", "--space", "nope")
	g.run("space-list", "", "space", "list", "--limit", "5")

	// Backups: save, inspect, verify (matches), a write, verify (does not),
	// restore, verify (matches again).
	backup := filepath.Join(tmp, "arbiter.snap")
	g.run("snapshot-save", "", "snapshot", "save", backup)
	g.run("snapshot-inspect", "", "snapshot", "inspect", backup)
	g.run("snapshot-verify", "", "snapshot", "verify", backup, "--cluster")
	runCLI(t, g.env, "", "node", "create", "after-backup")
	g.run("snapshot-verify-changed", "", "snapshot", "verify", backup)
	g.run("snapshot-restore", "", "snapshot", "restore", backup)
	g.run("snapshot-verify-restored", "", "snapshot", "verify", backup)

	// Allocation writes with typed flags; a create that loses prints the
	// flat conflict body and exits 3.
	g.run("space-put", "", "space", "put", "--space", "golden", "--catalog", "T1=Comparative survey", "--alias", "T1=survey", "--delivery-modes", "result")
	g.run("task-create", "", "task", "create", "--space", "golden", "--title", "Comparative survey", "--delivery-mode", "result", "--idempotency-key", "g1")
	g.run("task-create-lost", "", "task", "create", "--space", "golden", "--title", "Other", "--work-item", "T1", "--delivery-mode", "result", "--idempotency-key", "g2")

	// Two clients: the first is bound to the dead address and fails every
	// call, the second measures; a run where every call failed would exit 1.
	g.run("bench", "", "bench", "--clients", "2", "--duration", "200ms", "--warmup", "0s")

	var names []string
	entries, _ := os.ReadDir(filepath.Join("testdata", "golden"))
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".json"); !g.seen[name] {
			names = append(names, e.Name())
		}
	}
	if len(names) > 0 {
		t.Errorf("golden files no command wrote: %v", names)
	}
}
