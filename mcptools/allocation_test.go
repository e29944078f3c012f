package mcptools_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/client"
)

var catalog = []client.CatalogRow{
	{WorkItemID: "T1", CanonicalTitle: "Comparative survey of multi-agent orchestration patterns and harnesses",
		Aliases: []string{"literature review of agent frameworks"}},
	{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry patterns for looping agents",
		Aliases: []string{"halting conditions and termination", "checkpoints and resumption of loops"}},
}

// Two titles that bind the same slot (T1): one conflict key.
var raceTitles = [2]string{
	"Survey multi-agent orchestration patterns, harnesses and frameworks (loops, checkpoints)",
	"Comparative survey of multi-agent orchestration patterns and harnesses",
}

// space creates a space of the test's own (as ops, a controller).
func space(t *testing.T) string {
	t.Helper()
	slug := unique(t)
	_, err := newClient(t, "ops").Allocation().PutSpace(ctxOf(t), slug, client.PutSpaceRequest{TenantRef: "t", Catalog: catalog})
	must(t, err)
	return slug
}

// Two agents race one allocation slot, each through its own MCP session
// and credential: exactly one gets the 201 body (a task, open), the other
// a tool error carrying the flat 409 that names the winner's task, with
// write_occurred false; one task exists afterwards.
func TestAllocationRaceOneWinner(t *testing.T) {
	slug := space(t)
	agents := [2]string{"agent-a", "agent-b"}
	results := make([]result, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, who := range agents {
		s := agent(t, who)
		wg.Go(func() {
			<-start
			results[i] = call(t, s, "allocation_create_task", map[string]any{
				"space": slug, "title": raceTitles[i], "delivery_mode": "result", "idempotency_key": "race-" + who})
		})
	}
	close(start)
	wg.Wait()

	var won, lost []result
	for _, r := range results {
		if r.IsError {
			lost = append(lost, r)
		} else {
			won = append(won, r)
		}
	}
	if len(won) != 1 || len(lost) != 1 {
		t.Fatalf("want one winner and one loser: %+v", results)
	}
	w, l := won[0], lost[0]
	if w.get("task", "status") != "open" || w.get("task", "work_item_id") != "T1" || w.get("task", "space") != slug {
		t.Fatalf("winner's body: %s", w.Raw)
	}
	winnerID := w.get("task", "id").(float64)
	if l.Body["error"] != "allocation_conflict" || l.Body["write_occurred"] != false {
		t.Fatalf("loser's body: %s", l.Raw)
	}
	if code := l.Body["code"]; code != "conflict_key_occupied" && code != "conflict_key_reserved" {
		t.Fatalf("loser's code: %s", l.Raw)
	}
	if l.get("winner", "id") != winnerID || l.get("winner", "type") != "task" {
		t.Fatalf("loser's winner %v, want task %v: %s", l.Body["winner"], winnerID, l.Raw)
	}
	if l.get("conflict_key", "target") != w.get("task", "conflict_key", "target") {
		t.Fatalf("loser's conflict key: %s, winner's %v", l.Raw, w.get("task", "conflict_key"))
	}
	if l.Meta["http_status"] != float64(409) {
		t.Fatalf("loser's _meta: %v", l.Meta)
	}

	// The same idempotency key again answers the first result: the winner
	// its task, not a conflict with itself.
	again := call(t, agent(t, "agent-a"), "allocation_create_task", map[string]any{
		"space": slug, "title": raceTitles[0], "delivery_mode": "result", "idempotency_key": "race-agent-a"})
	if results[0].IsError != again.IsError {
		t.Fatalf("a retry under the same key decided anew: first %s, again %s", results[0].Raw, again.Raw)
	}

	list := call(t, agent(t, "agent-b"), "allocation_list_tasks", map[string]any{"space": slug}).ok(t)
	tasks, _ := list.Body["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["id"] != winnerID {
		t.Fatalf("tasks after the race: %s", list.Raw)
	}
}

// A bad argument is a tool error naming the field, and nothing changes:
// one the schema refuses (never sent) and one the API refuses (its 422).
func TestAllocationBadArgument(t *testing.T) {
	slug := space(t)
	s := agent(t, "agent-a")
	cases := []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"missing", map[string]any{"space": slug, "title": raceTitles[0]}, "delivery_mode"},
		{"wrong type", map[string]any{"space": slug, "title": raceTitles[0], "delivery_mode": 7}, "delivery_mode"},
		{"unknown", map[string]any{"space": slug, "title": raceTitles[0], "delivery_mode": "result", "owner": "agent-b"}, "owner"},
		{"refused by the API", map[string]any{"space": slug, "title": raceTitles[0], "delivery_mode": "carrier-pigeon"}, "delivery_mode"},
		{"empty title", map[string]any{"space": slug, "title": "", "delivery_mode": "result"}, "title"},
	}
	for _, c := range cases {
		r := call(t, s, "allocation_create_task", c.args)
		if !r.IsError || r.code() != "invalid" || !strings.Contains(r.message(), c.field) || r.Meta["http_status"] != float64(422) {
			t.Errorf("%s: want invalid naming %s, got %s (meta %v)", c.name, c.field, r.Raw, r.Meta)
		}
	}
	list := call(t, s, "allocation_list_tasks", map[string]any{"space": slug}).ok(t)
	if tasks, _ := list.Body["tasks"].([]any); len(tasks) != 0 {
		t.Fatalf("a refused create left tasks: %s", list.Raw)
	}
	// And the same create with good arguments goes through.
	good := call(t, s, "allocation_create_task", map[string]any{"space": slug, "title": raceTitles[0], "delivery_mode": "result"}).ok(t)
	if good.get("task", "status") != "open" {
		t.Fatalf("create: %s", good.Raw)
	}
}

// The rest of allocation through the tools: bind explains without
// writing, a claim guarded by the version read (a stale one refused), a
// note, and a steward's supersession of a duplicate.
func TestAllocationLifecycleTools(t *testing.T) {
	slug := space(t)
	a, ops := agent(t, "agent-a"), agent(t, "ops")
	bound := call(t, a, "allocation_bind", map[string]any{"space": slug, "title": raceTitles[0]}).ok(t)
	if bound.Body["work_item_id"] != "T1" {
		t.Fatalf("bind: %s", bound.Raw)
	}
	if list := call(t, a, "allocation_list_tasks", map[string]any{"space": slug}).ok(t); len(list.Body["tasks"].([]any)) != 0 {
		t.Fatalf("bind wrote: %s", list.Raw)
	}
	task := call(t, a, "allocation_create_task", map[string]any{"space": slug, "title": raceTitles[0], "delivery_mode": "result"}).ok(t)
	id, version := task.get("task", "id"), task.get("task", "version")
	claimed := call(t, a, "allocation_transition_task", map[string]any{"space": slug, "task_id": id, "action": "claim", "expected_version": version}).ok(t)
	if claimed.get("task", "status") != "claimed" || claimed.get("task", "assignee") != "agent-a" {
		t.Fatalf("claim: %s", claimed.Raw)
	}
	if stale := call(t, a, "allocation_transition_task", map[string]any{"space": slug, "task_id": id, "action": "submit", "expected_version": version}); !stale.IsError {
		t.Fatalf("a transition on a stale version: %s", stale.Raw)
	}
	note := call(t, agent(t, "agent-b"), "allocation_post_note", map[string]any{"space": slug, "task_id": id, "kind": "post_review_note",
		"criterion_index": 0, "body": "cover checkpointing too", "delivery_mode": "result"}).ok(t)
	if note.get("note", "principal") != "agent-b" || note.get("note", "task_id") != id {
		t.Fatalf("note: %s", note.Raw)
	}
	other := call(t, a, "allocation_create_task", map[string]any{"space": slug, "title": catalog[1].CanonicalTitle, "delivery_mode": "result"}).ok(t)
	sup := call(t, ops, "allocation_supersede_task", map[string]any{"space": slug, "task_id": other.get("task", "id"),
		"surviving_task": id, "reason": "duplicate"}).ok(t)
	if sup.get("task", "status") != "superseded" {
		t.Fatalf("supersede: %s", sup.Raw)
	}
	if refused := call(t, a, "allocation_supersede_task", map[string]any{"space": slug, "task_id": id, "surviving_task": id, "reason": "x"}); !refused.IsError {
		t.Fatalf("a member superseded: %s", refused.Raw)
	}
}
