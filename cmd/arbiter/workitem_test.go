package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// digestArgs are the four digests of a submit, computed from text.
var digestArgs = []string{"--command-text", "make test", "--policy-text", "policy", "--catalog-text", "catalog", "--model-text", "model"}

// submitArgs is `workitem submit` of item id in graph g with extra flags.
func submitArgs(g, id string, extra ...string) []string {
	args := append([]string{"workitem", "submit", "--tenant", "t", "--graph", g, "--id", id, "--kind", "build", "--input-ref", "in", "--max-attempts", "3"}, digestArgs...)
	return append(args, extra...)
}

// The work-item commands with typed flags against a one-node cluster:
// submit (digests computed from text), batch from standard input,
// claim, complete, cancel, get, list; the same with --json bodies; an id
// in use exits 3; -o table is flat.
func TestWorkitemCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}

	var sub client.SubmitResult
	cliJSON(t, env, &sub, submitArgs("cli", "cli-a")...)
	if !sub.Created || sub.WorkItemID != "cli-a" || sub.IdempotencyKey == "" {
		t.Fatalf("workitem submit: %+v", sub)
	}
	var got client.ItemResult
	cliJSON(t, env, &got, "workitem", "get", "--tenant", "t", "--id", "cli-a")
	if w := got.WorkItem; w.CommandDigest != sha256Digest([]byte("make test")) || w.PolicyDigest != sha256Digest([]byte("policy")) || w.MaxAttempts != 3 {
		t.Fatalf("workitem get: the digests are not the texts': %+v", w)
	}
	// The same key again replays; another request under it is refused.
	var again client.SubmitResult
	cliJSON(t, env, &again, submitArgs("cli", "cli-a", "--idempotency-key", sub.IdempotencyKey)...)
	if !again.Replayed {
		t.Fatalf("a submit under the same key: %+v", again)
	}
	// An id in use under another key: a decided conflict, exit 3.
	if r := runCLI(t, env, "", submitArgs("cli", "cli-a", "--kind", "other")...); r.status != exitNotTaken {
		t.Fatalf("a submit of an id in use: status %d, stderr %s", r.status, r.stderr)
	}

	items := `[{"work_item_id":"cli-b","depends_on":["cli-a"],"command_digest":"` + sha256Digest([]byte("b")) + `","kind":"build","priority":0,
		"input_ref":"in","policy_digest":"` + sha256Digest(nil) + `","catalog_digest":"` + sha256Digest(nil) + `","model_digest":"` + sha256Digest(nil) + `",
		"max_attempts":3,"depends_on":["cli-a"],"provenance_refs":[],"max_tenant_in_flight":4096}]`
	r := runCLI(t, env, items, "workitem", "batch", "--tenant", "t", "--graph", "cli", "--items", "-")
	if r.status != 0 || !strings.Contains(r.stdout, `"batch_sequence_range"`) {
		t.Fatalf("workitem batch --items -: %+v", r)
	}

	var cl client.ClaimResult
	cliJSON(t, env, &cl, "workitem", "claim", "--filename", `{"tenant_ref":"t","graph_ref":"cli","owner_ref":"cli","ttl_ms":60000}`)
	if cl.WorkItem.WorkItemID != "cli-a" {
		t.Fatalf("workitem claim --json: %+v", cl)
	}
	var done client.ItemResult
	cliJSON(t, env, &done, "workitem", "complete", "--filename",
		fmt.Sprintf(`{"tenant_ref":"t","work_item_id":"cli-a","attempt":%d,"fence":%d,"outcome":"succeeded"}`, cl.Attempt, cl.Fence))
	if done.WorkItem.Status != "succeeded" {
		t.Fatalf("workitem complete --json: %+v", done)
	}
	var cancelled client.ItemResult
	cliJSON(t, env, &cancelled, "workitem", "cancel", "--tenant", "t", "--id", "cli-b", "--reason", "cli")
	if cancelled.WorkItem.Status != "cancelled" {
		t.Fatalf("workitem cancel: %+v", cancelled)
	}

	// Typed flags: claim by kind, complete failed with a result.
	cliJSON(t, env, &sub, submitArgs("cli", "cli-c", "--kind", "flags")...)
	cl = client.ClaimResult{}
	cliJSON(t, env, &cl, "workitem", "claim", "--tenant", "t", "--graph", "cli", "--owner", "cli", "--kinds", "flags", "--ttl", "1m")
	if cl.WorkItem.WorkItemID != "cli-c" {
		t.Fatalf("workitem claim with flags: %+v", cl)
	}
	// A stale fence is a decided refusal: exit 3.
	if r := runCLI(t, env, "", "workitem", "complete", "--tenant", "t", "--id", "cli-c", "--attempt", fmt.Sprint(cl.Attempt),
		"--fence", fmt.Sprint(cl.Fence+7), "--outcome", "failed"); r.status != exitNotTaken {
		t.Fatalf("complete with another fence: status %d, stderr %s", r.status, r.stderr)
	}
	cliJSON(t, env, &done, "workitem", "complete", "--tenant", "t", "--id", "cli-c", "--attempt", fmt.Sprint(cl.Attempt),
		"--fence", fmt.Sprint(cl.Fence), "--outcome", "failed", "--result", "r-1")
	if done.WorkItem.Status != "failed" || done.WorkItem.ResultRef != "r-1" {
		t.Fatalf("workitem complete with flags: %+v", done.WorkItem)
	}
	var page client.WorkItemPage
	cliJSON(t, env, &page, "workitem", "list", "--tenant", "t", "--graph", "cli", "--status", "succeeded", "--limit", "5")
	if len(page.WorkItems) != 1 || page.WorkItems[0].WorkItemID != "cli-a" {
		t.Fatalf("workitem list --status succeeded: %+v", page)
	}
	if r := runCLI(t, env, "", "workitem", "get", "--tenant", "t", "--id", "nowhere"); r.status != exitError || !strings.Contains(r.stderr, "not_found") {
		t.Fatalf("workitem get of a missing item: %+v", r)
	}

	for _, args := range [][]string{
		{"workitem", "list", "--tenant", "t", "--graph", "cli"},
		{"workitem", "get", "--tenant", "t", "--id", "cli-c"},
	} {
		r := runCLI(t, env, "", append(args, "-o", "table")...)
		if r.status != 0 || r.stdout == "" || strings.ContainsAny(r.stdout, "{}") {
			t.Errorf("arbiter %s -o table: status %d, JSON in a cell?\n%s", strings.Join(args, " "), r.status, r.stdout)
		}
	}
}

// Host resource reservation from the command line: a profile set, a
// host and its telemetry, an item whose record the CLI seals (the v1:
// fingerprint the server checks), claimed, reserved, queried, released;
// reclaim; a record rewritten with extension.
func TestWorkitemReservationCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}

	profiles := `[{"name":"p","version":"1","weights":{"cpu":1,"memory":1,"disk":1,"process":1},
		"max":{"cpu_millis":16000,"memory_mib":65536,"disk_mib":1048576,"processes":64},
		"fairness":{"max_debt":100,"decay_per_s":1},"disk":{"min_free_mib":100},"telemetry_max_age_ms":600000,"mode":"enabled"}]`
	if r := runCLI(t, env, profiles, "workitem", "set-profiles", "--profiles", "-"); r.status != 0 {
		t.Fatalf("workitem set-profiles: %+v", r)
	}
	var set client.Profiles
	cliJSON(t, env, &set, "workitem", "profiles")
	if len(set.Profiles) != 1 || !set.Profiles[0].Complete {
		t.Fatalf("workitem profiles: %+v", set)
	}
	var host client.HostResult
	cliJSON(t, env, &host, "workitem", "host", "--host", "h1", "--label", "zone=a", "--cpu-millis", "4000", "--memory-mib", "65536",
		"--disk-mib", "1048576", "--processes", "64")
	if !host.Created || host.Host.Labels["zone"] != "a" || host.Host.Capacity.CPUMillis != 4000 {
		t.Fatalf("workitem host: %+v", host)
	}
	if r := runCLI(t, env, "", "workitem", "host", "--host", "h1", "--cpu-millis", "1", "--expected-epoch", "99"); r.status != exitNotTaken {
		t.Fatalf("workitem host at another epoch: status %d, stderr %s", r.status, r.stderr)
	}
	cliJSON(t, env, &host, "workitem", "telemetry", "--host", "h1", "--report-seq", "1", "--disk-free-mib", "1048576")

	// The record without a fingerprint: the CLI seals it.
	record := `{"profile":{"name":"p","version":"1"},"dimensions":{"cpu_millis":1000,"memory_mib":1024,"disk_mib":1024,"processes":1},
		"concurrency":{"key":"k","limit":64},"exclusivity":{"repository":false,"branch":false},"repository":"app","base_ref":"main",
		"fairness":{"group":"team","cost":1},"disk":{"min_free_mib":10}}`
	var sub client.SubmitResult
	cliJSON(t, env, &sub, submitArgs("rs", "rs-1", "--reservation", record)...)
	var item client.ItemResult
	cliJSON(t, env, &item, "workitem", "get", "--tenant", "t", "--id", "rs-1")
	var meta struct {
		Record extension.Extension `json:"resource_reservation"`
	}
	if err := json.Unmarshal(item.WorkItem.Metadata, &meta); err != nil || !strings.HasPrefix(meta.Record.Fingerprint, "v1:") {
		t.Fatalf("the item's record is not sealed: %v %s", err, item.WorkItem.Metadata)
	}
	var cl client.ClaimResult
	cliJSON(t, env, &cl, "workitem", "claim", "--tenant", "t", "--graph", "rs", "--owner", "w", "--ttl", "1m")
	claim := []string{"--tenant", "t", "--id", "rs-1", "--attempt", fmt.Sprint(cl.Attempt), "--fence", fmt.Sprint(cl.Fence)}
	var res client.ReservationResult
	cliJSON(t, env, &res, append([]string{"workitem", "reserve"}, claim...)...)
	if res.Reservation.HostID != "h1" || res.Reservation.Status != "active" || res.Reservation.Fingerprint != meta.Record.Fingerprint {
		t.Fatalf("workitem reserve: %+v", res.Reservation)
	}
	var q client.ReservationQueryResult
	cliJSON(t, env, &q, "workitem", "query", "--tenant", "t")
	if len(q.Reservations) != 1 || len(q.Hosts) != 1 || q.Hosts[0].Used.CPUMillis != 1000 {
		t.Fatalf("workitem query: %+v", q)
	}
	if r := runCLI(t, env, "", "workitem", "query", "--tenant", "t", "-o", "table"); r.status != 0 || strings.ContainsAny(r.stdout, "{}") {
		t.Errorf("workitem query -o table: status %d, JSON in a cell?\n%s", r.status, r.stdout)
	}
	// hosts: the shared hosts a page at a time; -o table is flat (one row a
	// host, labels and dimensions in dotted columns).
	var hosts client.HostPage
	cliJSON(t, env, &hosts, "workitem", "hosts", "--tenant", "t", "--limit", "1")
	if len(hosts.Hosts) != 1 || hosts.Hosts[0].HostID != "h1" || hosts.Hosts[0].Used.CPUMillis != 1000 || hosts.Hosts[0].Free.CPUMillis != 3000 {
		t.Fatalf("workitem hosts: %+v", hosts)
	}
	r := runCLI(t, env, "", "workitem", "hosts", "--tenant", "t", "-o", "table")
	if r.status != 0 || strings.ContainsAny(r.stdout, "{}") || !strings.Contains(r.stdout, "HOST_ID") || !strings.Contains(r.stdout, "FREE.CPU_MILLIS") ||
		!regexp.MustCompile(`(?m)^h1 `).MatchString(r.stdout) {
		t.Errorf("workitem hosts -o table: status %d, not a flat table of the hosts?\n%s", r.status, r.stdout)
	}
	if r := runCLI(t, env, "", "workitem", "hosts", "--tenant", "t", "--limit", "500"); r.status != exitUsage {
		t.Errorf("workitem hosts --limit 500: status %d, want %d (%s)", r.status, exitUsage, r.stderr)
	}
	var rel client.ReservationResult
	cliJSON(t, env, &rel, append([]string{"workitem", "release", "--reservation", res.Reservation.ReservationID}, claim...)...)
	if rel.Reservation.Status == "active" {
		t.Fatalf("workitem release: %+v", rel.Reservation)
	}
	var rec client.ReservationReclaimResult
	cliJSON(t, env, &rec, "workitem", "reclaim", "--tenant", "t", "--max", "10")

	// extension: a record for an item that has none, sealed by the CLI.
	cliJSON(t, env, &sub, submitArgs("rs", "rs-2")...)
	cliJSON(t, env, &item, "workitem", "extension", "--tenant", "t", "--id", "rs-2", "--fence", "0", "--record", record)
	meta.Record = extension.Extension{}
	if err := json.Unmarshal(item.WorkItem.Metadata, &meta); err != nil || !strings.HasPrefix(meta.Record.Fingerprint, "v1:") {
		t.Fatalf("workitem extension: %s", item.WorkItem.Metadata)
	}
}

// Command-line mistakes exit 2 with one line and a pointer to --help;
// --help lists only the command's flags and the connection flags; a
// submit whose outcome is unknown prints the key it made.
func TestWorkitemUsageAndUnknownOutcome(t *testing.T) {
	env := map[string]string{"ARBITER_ADDR": "http://" + deadAddr(t)}
	for _, args := range [][]string{
		{"workitem", "claim", "--tenant", "t", "--owner", "o", "--ttl", "1m", "--bogus"},
		{"workitem", "claim", "--tenant", "t", "--owner", "o"}, // no --ttl
		{"workitem", "claim", "--tenant", "t", "--filename", `{"tenant_ref":"t"}`},
		{"workitem", "cancel", "--filename", `{"tenant_ref":"t","color":"red"}`},
		{"workitem", "complete", "--tenant", "t", "--id", "x", "--attempt", "one", "--fence", "1", "--outcome", "failed"},
		{"workitem", "submit", "--tenant", "t", "--kind", "k", "--command", "sha256:00"}, // no other digests
		append([]string{"workitem", "submit", "--tenant", "t", "--kind", "k", "--reservation", `{"profile":{}}`}, digestArgs...),
		{"workitem", "get", "--tenant", "t"}, // no --id
		{"workitem", "frobnicate"},
		{"workitem", "list", "--tenant", "t", "-o", "yaml"},
	} {
		r := runCLI(t, env, "", args...)
		if r.status != exitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 1 || !strings.Contains(r.stderr, "--help'") {
			t.Errorf("arbiter %s: status %d, stderr %q; want %d, one line and see '... --help'", strings.Join(args, " "), r.status, r.stderr, exitUsage)
		}
	}
	r := runCLI(t, nil, "", "workitem", "get", "--help")
	if r.status != 0 || !strings.Contains(r.stdout, "--tenant ") || !strings.Contains(r.stdout, "--addr ") {
		t.Fatalf("workitem get --help: %+v", r)
	}
	for _, other := range []string{"--owner ", "--ttl ", "--json ", "--idempotency-key ", "--reservation "} {
		if strings.Contains(r.stdout, other) {
			t.Errorf("workitem get --help lists %s, a flag of another command:\n%s", other, r.stdout)
		}
	}

	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(drop.Close)
	env = map[string]string{"ARBITER_ADDR": drop.URL}
	for _, args := range [][]string{
		submitArgs("g", "x"),
		{"workitem", "claim", "--tenant", "t", "--owner", "o", "--ttl", "1m"},
	} {
		r := runCLI(t, env, "", args...)
		if r.status != exitError || !regexp.MustCompile(`(?m)^retry with: --idempotency-key go-[0-9a-f]+$`).MatchString(r.stderr) {
			t.Errorf("arbiter %s, an unknown outcome: status %d, stderr %q", strings.Join(args, " "), r.status, r.stderr)
		}
	}
}
