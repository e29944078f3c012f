package mcptools_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
)

// item is a work item's submit arguments.
func item(id, key string) map[string]any {
	return map[string]any{"tenant_ref": "t", "work_item_id": id, "idempotency_key": key, "kind": "ci", "input_ref": "in",
		"command_digest": digest("run tests"), "policy_digest": digest("policy"), "catalog_digest": digest("catalog"),
		"model_digest": digest("model"), "max_attempts": 2, "max_tenant_in_flight": 1000, "metadata": map[string]any{"n": 1}}
}

// Work items through the tools: submit (and its replay), a batch, a
// claim as the caller (owner_ref and claimed_by are agent-a, no input
// names them), a stale completion refused, the completion, cancel, get,
// list, and a reservation query.
func TestWorkItemTools(t *testing.T) {
	s := agent(t, "agent-a")
	id := unique(t)
	first := call(t, s, "workitem_submit", item(id, "k-"+id)).ok(t)
	if first.Body["created"] != true || first.Body["status"] != "pending" {
		t.Fatalf("submit: %s", first.Raw)
	}
	if again := call(t, s, "workitem_submit", item(id, "k-"+id)).ok(t); again.Body["replayed"] != true {
		t.Fatalf("submit again: %s", again.Raw)
	}
	batch := call(t, s, "workitem_submit_batch", map[string]any{"tenant_ref": "t", "idempotency_key": "b-" + id,
		"requests": []any{item(id+"-b", ""), item(id+"-c", "")}}).ok(t)
	if results, _ := batch.Body["results"].([]any); len(results) != 2 {
		t.Fatalf("batch: %s", batch.Raw)
	}
	claim := call(t, s, "workitem_claim", map[string]any{"tenant_ref": "t", "work_item_id": id, "ttl_ms": 60000}).ok(t)
	if claim.get("work_item", "status") != "claimed" || claim.get("work_item", "owner_ref") != "agent-a" ||
		claim.get("work_item", "claimed_by") != "agent-a" {
		t.Fatalf("claim: %s", claim.Raw)
	}
	complete := map[string]any{"tenant_ref": "t", "work_item_id": id, "attempt": claim.Body["attempt"],
		"fence": claim.Body["fence"].(float64) + 1, "outcome": "succeeded"}
	if stale := call(t, s, "workitem_complete", complete); !stale.IsError || stale.code() != "stale_fence" {
		t.Fatalf("a completion with another fence: %s", stale.Raw)
	}
	complete["fence"] = claim.Body["fence"]
	if done := call(t, s, "workitem_complete", complete).ok(t); done.get("work_item", "status") != "succeeded" {
		t.Fatalf("complete: %s", done.Raw)
	}
	if c := call(t, s, "workitem_cancel", map[string]any{"tenant_ref": "t", "work_item_id": id + "-b", "reason": "not needed"}).ok(t); c.get("work_item", "status") != "cancelled" {
		t.Fatalf("cancel: %s", c.Raw)
	}
	if got := call(t, s, "workitem_get", map[string]any{"tenant_ref": "t", "work_item_id": id}).ok(t); got.get("work_item", "status") != "succeeded" {
		t.Fatalf("get: %s", got.Raw)
	}
	list := call(t, s, "workitem_list", map[string]any{"tenant_ref": "t", "limit": 128}).ok(t)
	if items, _ := list.Body["work_items"].([]any); len(items) == 0 {
		t.Fatalf("list: %s", list.Raw)
	}
	if q := call(t, s, "reservation_query", map[string]any{"tenant_ref": "t", "work_item_id": id}).ok(t); q.Body["reservations"] == nil && q.Body["hosts"] == nil {
		t.Fatalf("reservation query: %s", q.Raw)
	}
	if r := call(t, s, "reservation_reserve", map[string]any{"tenant_ref": "t", "work_item_id": id + "-c", "attempt": 1, "fence": 1}); !r.IsError {
		t.Fatalf("a reservation for an unclaimed item: %s", r.Raw)
	}
}

// The shared hosts through the tools: any reader of a tenant lists them
// a page at a time in host_id order (next_cursor as after); a tenant the
// caller is not in is not_found.
func TestListHostsTool(t *testing.T) {
	s := agent(t, "agent-a")
	id := unique(t)
	_, err := newClient(t, "ops").Reservations().PutHost(ctxOf(t), client.PutHostRequest{HostID: id, Labels: map[string]string{},
		Capacity: client.Dimensions{CPUMillis: 1000, MemoryMiB: 1024, DiskMiB: 1024, Processes: 2}})
	must(t, err)
	var found map[string]any
	after := ""
	for pages := 0; found == nil; pages++ {
		if pages > 128 { // MaxHosts, one a page
			t.Fatalf("paging does not end")
		}
		page := call(t, s, "reservation_list_hosts", map[string]any{"tenant_ref": "t", "limit": 1, "after": after}).ok(t)
		hosts, _ := page.Body["hosts"].([]any)
		if len(hosts) > 1 {
			t.Fatalf("a page of limit 1: %s", page.Raw)
		}
		for _, h := range hosts {
			if h := h.(map[string]any); h["host_id"] == id {
				found = h
			}
		}
		if after, _ = page.Body["next_cursor"].(string); after == "" {
			break
		}
	}
	if found == nil || found["telemetry_age_ms"] != float64(-1) {
		t.Fatalf("host %s: %v", id, found)
	}
	if r := call(t, s, "reservation_list_hosts", map[string]any{"tenant_ref": "u"}); !r.IsError || r.code() != "not_found" {
		t.Fatalf("the hosts as a tenant the caller is not in: %s", r.Raw)
	}
}

// Concepts through the tools, as the caller: reserve (its owner is the
// caller's digest), a second request refused naming nothing changed,
// materialize with the fence, a stale fence refused, get, reserve next.
func TestConceptTools(t *testing.T) {
	ops := newClient(t, "ops").Concepts()
	ctx := ctxOf(t)
	ns := "MCP" + strings.Map(func(r rune) rune { return 'A' + (r-'0')%26 }, fmt.Sprint(time.Now().UnixNano()%1e8))
	cur, err := ops.Policies(ctx, client.Linearizable)
	must(t, err)
	_, err = ops.SetPolicies(ctx, client.PoliciesRequest{Policies: append(cur.Policies,
		client.ConceptNamespacePolicy{Namespace: ns, Min: 1, Max: 2, PolicyVersion: "1"})})
	must(t, err)
	who, err := newClient(t, "agent-a").Cluster().Whoami(ctx)
	must(t, err)

	s := agent(t, "agent-a")
	first := call(t, s, "concept_reserve", map[string]any{"concept_id": ns + "-1", "tenant_ref": "t", "request_ref": "r1", "purpose_digest": digest("p")}).ok(t)
	rec := first.Body["record"].(map[string]any)
	if first.Body["created"] != true || rec["owner_ref"] != who.OwnerDigest || rec["state"] != "reserved" {
		t.Fatalf("reserve: %s", first.Raw)
	}
	other := call(t, agent(t, "agent-b"), "concept_reserve", map[string]any{"concept_id": ns + "-1", "tenant_ref": "t", "request_ref": "r2", "purpose_digest": digest("p")})
	if !other.IsError || other.code() != "conflict" {
		t.Fatalf("another agent's reserve: %s", other.Raw)
	}
	tr := map[string]any{"concept_id": ns + "-1", "tenant_ref": "t", "reservation_id": rec["reservation_id"],
		"fingerprint": rec["fingerprint"], "expected_fence": rec["fence"], "action": "materialize"}
	moved := call(t, s, "concept_transition", tr).ok(t)
	if moved.get("record", "state") != "materialized" {
		t.Fatalf("materialize: %s", moved.Raw)
	}
	tr["action"] = "land"
	if stale := call(t, s, "concept_transition", tr); !stale.IsError || stale.code() != "stale_fence" {
		t.Fatalf("land with the old fence: %s", stale.Raw)
	}
	if got := call(t, s, "concept_get", map[string]any{"concept_id": ns + "-1", "tenant_ref": "t"}).ok(t); got.Body["state"] != "materialized" {
		t.Fatalf("get: %s", got.Raw)
	}
	next := call(t, s, "concept_reserve_next", map[string]any{"namespace": ns, "from": 1, "to": 2,
		"request": map[string]any{"tenant_ref": "t", "request_ref": "n1", "purpose_digest": digest("p")}}).ok(t)
	if next.get("record", "concept_id") != ns+"-2" {
		t.Fatalf("reserve next: %s", next.Raw)
	}
	if full := call(t, s, "concept_reserve_next", map[string]any{"namespace": ns, "from": 1, "to": 2,
		"request": map[string]any{"tenant_ref": "t", "request_ref": "n2", "purpose_digest": digest("p")}}); full.code() != "exhausted" {
		t.Fatalf("reserve next of a full range: %s", full.Raw)
	}
}

// Nodes through the tools (admin): exactly one create wins an id, CAS
// swaps only when its condition holds, get reads it.
func TestNodeTools(t *testing.T) {
	s := agent(t, "ops")
	id := "lock/" + unique(t)
	first := call(t, s, "node_create", map[string]any{"node_id": id, "properties": map[string]any{"owner": "ci-7"}}).ok(t)
	second := call(t, s, "node_create", map[string]any{"node_id": id, "properties": map[string]any{"owner": "ci-8"}}).ok(t)
	if first.Body["created"] != true || second.Body["created"] != false || second.get("node", "properties", "owner") != "ci-7" {
		t.Fatalf("create: %s then %s", first.Raw, second.Raw)
	}
	miss := call(t, s, "node_cas", map[string]any{"node_id": id, "conditions": map[string]any{"owner": "ci-8"}, "updates": map[string]any{"owner": "ci-9"}}).ok(t)
	hit := call(t, s, "node_cas", map[string]any{"node_id": id, "conditions": map[string]any{"owner": "ci-7"}, "updates": map[string]any{"owner": "ci-9"}}).ok(t)
	if miss.Body["swapped"] != false || hit.Body["swapped"] != true {
		t.Fatalf("cas: %s then %s", miss.Raw, hit.Raw)
	}
	if got := call(t, s, "node_get", map[string]any{"node_id": id}).ok(t); got.get("properties", "owner") != "ci-9" {
		t.Fatalf("get: %s", got.Raw)
	}
	if forbidden := call(t, agent(t, "agent-a"), "node_get", map[string]any{"node_id": id}); !forbidden.IsError || forbidden.code() != "forbidden" {
		t.Fatalf("a member reads a node: %s", forbidden.Raw)
	}
}
