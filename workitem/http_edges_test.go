package workitem_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/workitem"
)

// TestHTTPWorkItems is the HTTP edge test: every bound at its limit and
// one past it, every error code the issue lists, and for every refusal
// proof by the state hash that nothing changed. The refusals run first,
// on a small state (every hash is of the whole state); the acceptances at
// the limits, which store large rows, run last.
func TestHTTPWorkItems(t *testing.T) {
	f := newHTTPFixture(t)
	f.admission()
	f.submitRefusals()
	f.batchRefusals()
	f.stateRefusals()
	f.claims()
	f.reads()
	f.remoteService()
	f.atTheLimits()
	t.Logf("%d requests", f.requests)
}

// admission: 201, then 200 replayed for the same request, 409 for
// another request under the same key.
func (f *httpFixture) admission() {
	t := f.t
	var first workitem.SubmitResult
	f.created("submit", f.post("submit", "p1", body("k1", nil)), &first)
	if first.Status != "pending" || !first.Created || first.Replayed || first.CommandSequence != 1 || first.OutboxID == 0 ||
		first.Quota.InFlight != 1 || first.Quota.Cap != 4096 || first.IdempotencyKey != "k1" || len(first.ChangedIDs) != 1 {
		t.Fatalf("submit: %s", mustJSON(first))
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(f.post("submit", "p1", body("k1-keys", nil)).body, &keys)
	for _, k := range []string{"work_item_id", "status", "created", "replayed", "command_sequence", "idempotency_key", "dependencies",
		"quota", "outbox_id", "command_digest", "provenance_refs", "changed_ids"} {
		if keys[k] == nil {
			t.Errorf("the submit result lacks %q", k)
		}
	}
	before := f.hash()
	var again workitem.SubmitResult
	f.ok("replay", f.post("submit", "p1", body("k1", nil)), &again)
	if !again.Replayed || again.WorkItemID != first.WorkItemID || again.CommandSequence != 1 || again.OutboxID != first.OutboxID {
		t.Fatalf("replay: %s", mustJSON(again))
	}
	if f.hashAt(before.Index+1).Content != before.Content {
		t.Fatal("a replay changed the state")
	}
	f.refused("same key, another request", http.StatusConflict, errs.CodeIdempotencyConflict, "", true, func() reply {
		return f.post("submit", "p1", body("k1", map[string]any{"priority": 1}))
	})
}

func (f *httpFixture) submit(o map[string]any) func() reply {
	return func() reply { f.requests++; return f.post("submit", "p1", body(fmt.Sprintf("b%d", f.requests), o)) }
}

// submitRefusals: one past every bound of a submit is 422 naming the
// field, decided before the request reaches the log.
func (f *httpFixture) submitRefusals() {
	ghosts := make([]string, workitem.MaxDependencies+1)
	for i := range ghosts {
		ghosts[i] = fmt.Sprintf("ghost-%d", i)
	}
	over := map[string]struct {
		field string
		o     map[string]any
	}{
		"priority -1025":               {"priority", map[string]any{"priority": -1025}},
		"priority 1025":                {"priority", map[string]any{"priority": 1025}},
		"max_attempts 0":               {"max_attempts", map[string]any{"max_attempts": 0}},
		"max_attempts 4097":            {"max_attempts", map[string]any{"max_attempts": 4097}},
		"max_tenant_in_flight 0":       {"max_tenant_in_flight", map[string]any{"max_tenant_in_flight": 0}},
		"max_tenant_in_flight 4097":    {"max_tenant_in_flight", map[string]any{"max_tenant_in_flight": 4097}},
		"1025 dependencies":            {"depends_on", map[string]any{"depends_on": ghosts}},
		"a dependency twice":           {"depends_on[1]", map[string]any{"depends_on": []string{"a", "a"}}},
		"65 provenance refs":           {"provenance_refs", map[string]any{"provenance_refs": repeat("p", 65)}},
		"input_ref of 1 MiB + 1":       {"input_ref", map[string]any{"input_ref": strings.Repeat("i", workitem.MaxInputRefBytes+1)}},
		"an empty input_ref":           {"input_ref", map[string]any{"input_ref": ""}},
		"metadata of 64 KiB + 1":       {"metadata", map[string]any{"metadata": metadataOf(workitem.MaxMetadataBytes + 1)}},
		"metadata an array":            {"metadata", map[string]any{"metadata": []int{1}}},
		"tenant_ref of 513 bytes":      {"tenant_ref", map[string]any{"tenant_ref": id513}},
		"graph_ref of 513 bytes":       {"graph_ref", map[string]any{"graph_ref": id513}},
		"work_item_id of 513 bytes":    {"work_item_id", map[string]any{"work_item_id": id513}},
		"a work_item_id wi-":           {"work_item_id", map[string]any{"work_item_id": "wi-1-0"}},
		"kind of 513 bytes":            {"kind", map[string]any{"kind": id513}},
		"idempotency_key of 513 bytes": {"idempotency_key", map[string]any{"idempotency_key": id513}},
		"no idempotency_key":           {"idempotency_key", map[string]any{"idempotency_key": nil}},
		"policy_digest of 513 bytes":   {"policy_digest", map[string]any{"policy_digest": id513}},
		"catalog_digest of 513 bytes":  {"catalog_digest", map[string]any{"catalog_digest": id513}},
		"model_digest of 513 bytes":    {"model_digest", map[string]any{"model_digest": id513}},
		"a dependency of 513 bytes":    {"depends_on[0]", map[string]any{"depends_on": []string{id513}}},
		"a provenance ref of 513":      {"provenance_refs[0]", map[string]any{"provenance_refs": []string{id513}}},
		"deadline_unix 0":              {"deadline_unix", map[string]any{"deadline_unix": 0}},
		"deadline_unix 10000-01-01":    {"deadline_unix", map[string]any{"deadline_unix": workitem.MaxDeadlineUnix + 1}},
		"command_digest not sha256":    {"command_digest", map[string]any{"command_digest": "md5:abc"}},
		"command_digest uppercase":     {"command_digest", map[string]any{"command_digest": strings.ToUpper(digest)}},
		"priority not an integer":      {"priority", map[string]any{"priority": 1.5}},
		"an agent in the body":         {"agent", map[string]any{"agent": "me"}},
		"no kind":                      {"kind", map[string]any{"kind": nil}},
	}
	for what, c := range over {
		f.refused(what, http.StatusUnprocessableEntity, errs.CodeInvalid, c.field, false, f.submit(c.o))
	}
	f.refused("trailing data", http.StatusUnprocessableEntity, errs.CodeInvalid, "", false, func() reply {
		return f.post("submit", "p1", []byte(`{"tenant_ref":"t"} {}`))
	})
	f.refused("invalid UTF-8", http.StatusUnprocessableEntity, errs.CodeInvalid, "", false, func() reply {
		return f.post("submit", "p1", []byte("{\"tenant_ref\":\"t\xff\"}"))
	})
	// The body limit is 4 MiB on the admission routes only.
	big := body("big-over", map[string]any{"input_ref": strings.Repeat("i", workitem.MaxInputRefBytes)})
	f.refused("a body of 4 MiB + 1", http.StatusRequestEntityTooLarge, errs.CodeTooLarge, "", false, func() reply {
		return f.post("submit", "p1", padded(f.t, big, workitem.MaxRequestBytes+1))
	})
	quarter := strings.Repeat("q", workitem.MaxInputRefBytes-1000)
	four := map[string]any{"tenant_ref": "t", "idempotency_key": "big-batch-over", "requests": children(4, map[string]any{"input_ref": quarter})}
	f.refused("a batch of 4 MiB + 1", http.StatusRequestEntityTooLarge, errs.CodeTooLarge, "", false, func() reply {
		return f.post("submit-batch", "p1", padded(f.t, four, workitem.MaxRequestBytes+1))
	})
	f.refused("a claim body over 1 MiB", http.StatusRequestEntityTooLarge, errs.CodeTooLarge, "", false, func() reply {
		return f.post("claim", "p1", padded(f.t, map[string]any{"tenant_ref": "t", "owner_ref": "w", "ttl_ms": 1000}, 1<<20+1))
	})
}

func (f *httpFixture) batch(key string, kids []map[string]any) func() reply {
	return func() reply {
		return f.post("submit-batch", "p1", map[string]any{"tenant_ref": "t", "idempotency_key": key, "requests": kids})
	}
}

// batchRefusals: 0 or 129 children, a child of another tenant or graph,
// a child past a bound: 422; a child refused by the FSM leaves none of
// the others. A child may depend on an earlier one; a replay returns the
// original ids and sequences.
func (f *httpFixture) batchRefusals() {
	t := f.t
	f.created("a batch of 1", f.batch("one", children(1, nil))(), nil)
	f.refused("a batch of 0", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests", false, f.batch("zero", children(0, nil)))
	f.refused("a batch of 129", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests", false, f.batch("over", children(workitem.MaxBatch+1, nil)))
	f.refused("a child of another tenant", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[1].tenant_ref", false,
		f.batch("tenant", []map[string]any{child(nil), child(map[string]any{"tenant_ref": "u"})}))
	f.refused("a child of another graph", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[0].graph_ref", false,
		f.batch("graph", []map[string]any{child(map[string]any{"graph_ref": "g2"})}))
	f.refused("a child past a bound", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[1].max_attempts", false,
		f.batch("bound", []map[string]any{child(nil), child(map[string]any{"max_attempts": 4097})}))
	f.refused("two children of one id", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[1].work_item_id", false,
		f.batch("twice", []map[string]any{child(map[string]any{"work_item_id": "same"}), child(map[string]any{"work_item_id": "same"})}))
	chain := []map[string]any{child(map[string]any{"work_item_id": "chain-a"}), child(map[string]any{"depends_on": []string{"chain-a"}})}
	var chained workitem.BatchResult
	f.created("a child depending on an earlier one", f.batch("chain", chain)(), &chained)
	if chained.Results[1].Dependencies != (workitem.Dependencies{Total: 1}) {
		t.Fatalf("chained batch: %s", mustJSON(chained))
	}
	before := f.hash()
	var replayed workitem.BatchResult
	f.ok("a batch replayed", f.batch("chain", chain)(), &replayed)
	if !replayed.Replayed || !replayed.Results[1].Replayed || replayed.BatchSequenceRange != chained.BatchSequenceRange ||
		replayed.Results[1].WorkItemID != chained.Results[1].WorkItemID || f.hashAt(before.Index+1).Content != before.Content {
		t.Fatalf("batch replay: %s", mustJSON(replayed))
	}
	f.refused("a batch whose last child names a missing dependency", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[2].depends_on[0]", true,
		f.batch("late", []map[string]any{child(nil), child(nil), child(map[string]any{"depends_on": []string{"nowhere"}})}))
	f.refused("a batch replayed with another request", http.StatusConflict, errs.CodeIdempotencyConflict, "", true,
		f.batch("chain", chain[:1]))
}

// stateRefusals: what only the FSM can decide (dependencies, existing
// ids, deadlines, the cap, the caller's tenant and role).
func (f *httpFixture) stateRefusals() {
	t := f.t
	f.created("an item of tenant u", f.post("submit", "ou", body("u1", map[string]any{"tenant_ref": "u", "work_item_id": "u-only"})), nil)
	missing := f.refused("a missing dependency", http.StatusUnprocessableEntity, errs.CodeInvalid, "depends_on[0]", true,
		f.submit(map[string]any{"depends_on": []string{"u-onlx"}}))
	foreign := f.refused("another tenant's dependency", http.StatusUnprocessableEntity, errs.CodeInvalid, "depends_on[0]", true,
		f.submit(map[string]any{"depends_on": []string{"u-only"}}))
	missing.Error.Message = strings.ReplaceAll(missing.Error.Message, "u-onlx", "u-only")
	missing.Error.Detail["work_item_id"] = "u-only"
	if mustJSON(missing) != mustJSON(foreign) || foreign.Error.Detail["reason"] != "dependency_missing" || foreign.Error.Detail["work_item_id"] != "u-only" {
		t.Errorf("another tenant's item answers otherwise than a missing one:\n  %s\n  %s", mustJSON(missing), mustJSON(foreign))
	}
	f.refused("an id that exists", http.StatusConflict, errs.CodeConflict, "work_item_id", true, f.submit(map[string]any{"work_item_id": "chain-a"}))
	f.refused("a deadline that has passed", http.StatusUnprocessableEntity, errs.CodeInvalid, "deadline_unix", true,
		f.submit(map[string]any{"deadline_unix": time.Now().Unix() - 60}))
	capped := f.refused("the tenant at its cap", http.StatusConflict, errs.CodeExhausted, "", true, f.submit(map[string]any{"max_tenant_in_flight": 2}))
	if capped.Error.Detail["cap"] != float64(2) || capped.Error.Detail["in_flight"].(float64) < 2 {
		t.Errorf("exhausted detail %v", capped.Error.Detail)
	}
	f.refused("no credential", http.StatusUnauthorized, errs.CodeUnauthorized, "", false, func() reply { return f.post("submit", "", body("anon", nil)) })
	f.refused("a reader submits", http.StatusForbidden, errs.CodeForbidden, "", true, func() reply { return f.post("submit", "rd", body("rd", nil)) })
	f.refused("another tenant", http.StatusForbidden, errs.CodeForbidden, "", true, func() reply { return f.post("submit", "ou", body("ou", nil)) })
}

// claims covers claim, complete and cancel.
func (f *httpFixture) claims() {
	t := f.t
	claim := func(who string, o map[string]any) func() reply {
		b := map[string]any{"tenant_ref": "t", "graph_ref": "claims", "owner_ref": "w-" + who, "ttl_ms": 60_000}
		maps.Copy(b, o)
		return func() reply { return f.post("claim", who, b) }
	}
	f.refused("nothing claimable", http.StatusNotFound, errs.CodeNotFound, "", true, claim("p1", nil))
	for what, c := range map[string]struct {
		field string
		o     map[string]any
	}{
		"ttl 0":            {"ttl_ms", map[string]any{"ttl_ms": 0}},
		"ttl 24 h + 1 ms":  {"ttl_ms", map[string]any{"ttl_ms": workitem.MaxTTL.Milliseconds() + 1}},
		"17 kinds":         {"kinds", map[string]any{"kinds": kinds(17)}},
		"owner_ref of 513": {"owner_ref", map[string]any{"owner_ref": id513}},
	} {
		f.refused(what, http.StatusUnprocessableEntity, errs.CodeInvalid, c.field, false, claim("p1", c.o))
	}
	// Concurrent claims of one item through every node: exactly one wins.
	f.created("a claimable item", f.post("submit", "p1", body("solo", map[string]any{"graph_ref": "claims", "max_attempts": 2, "work_item_id": "solo"})), nil)
	var wg sync.WaitGroup
	results := make([]reply, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := []string{"p1", "p2"}[i%2]
			b, _ := json.Marshal(map[string]any{"tenant_ref": "t", "graph_ref": "claims", "owner_ref": fmt.Sprintf("w%d", i), "ttl_ms": 60_000, "kinds": []string{"build"}})
			results[i] = f.do(http.MethodPost, f.c.URL(i%f.c.Size())+"/v1/workitems/claim", who, b)
		}()
	}
	wg.Wait()
	var won []workitem.ClaimResult
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
			var c workitem.ClaimResult
			_ = json.Unmarshal(r.body, &c)
			won = append(won, c)
		case http.StatusNotFound:
		default:
			t.Fatalf("concurrent claim: %d %s", r.status, r.body)
		}
	}
	if len(won) != 1 || won[0].Attempt != 1 || won[0].WorkItem.WorkItemID != "solo" {
		t.Fatalf("concurrent claims: %d won (%+v), want exactly one", len(won), won)
	}
	c := won[0]
	holder := c.WorkItem.ClaimedBy
	other := map[string]string{"p1": "p2", "p2": "p1"}[holder]
	done := func(who string, o map[string]any) func() reply {
		b := map[string]any{"tenant_ref": "t", "work_item_id": "solo", "attempt": c.Attempt, "fence": c.Fence, "outcome": "succeeded"}
		maps.Copy(b, o)
		return func() reply { return f.post("complete", who, b) }
	}
	f.refused("a wrong fence", http.StatusConflict, errs.CodeStaleFence, "", true, done(holder, map[string]any{"fence": c.Fence + 1}))
	f.refused("a wrong attempt", http.StatusConflict, errs.CodeStaleFence, "", true, done(holder, map[string]any{"attempt": 2}))
	f.refused("another principal", http.StatusForbidden, errs.CodeForbidden, "", true, done(other, nil))
	f.refused("outcome cancelled", http.StatusUnprocessableEntity, errs.CodeInvalid, "outcome", false, done(holder, map[string]any{"outcome": "cancelled"}))
	f.refused("result_ref of 64 KiB + 1", http.StatusUnprocessableEntity, errs.CodeInvalid, "result_ref", false,
		done(holder, map[string]any{"result_ref": strings.Repeat("r", workitem.MaxResultRefBytes+1)}))
	f.refused("a missing item", http.StatusNotFound, errs.CodeNotFound, "", true, done(holder, map[string]any{"work_item_id": "nowhere"}))
	var ended workitem.ItemResult
	f.ok("complete with a result_ref of 64 KiB", done(holder, map[string]any{"result_ref": strings.Repeat("r", workitem.MaxResultRefBytes)})(), &ended)
	if ended.WorkItem.Status != "succeeded" {
		t.Fatalf("complete: %s", mustJSON(ended))
	}
	f.refused("cancel of a succeeded item", http.StatusConflict, errs.CodeConflict, "", true, func() reply {
		return f.post("cancel", "p1", map[string]any{"tenant_ref": "t", "work_item_id": "solo", "reason": "late"})
	})
	f.refused("cancel without a reason", http.StatusUnprocessableEntity, errs.CodeInvalid, "reason", false, func() reply {
		return f.post("cancel", "p1", map[string]any{"tenant_ref": "t", "work_item_id": "chain-a"})
	})
	var cancelled workitem.ItemResult
	f.ok("cancel", f.post("cancel", "p2", map[string]any{"tenant_ref": "t", "work_item_id": "chain-a", "reason": "operator"}), &cancelled)
	if cancelled.WorkItem.Status != "cancelled" || cancelled.WorkItem.Reason != "operator" {
		t.Fatalf("cancel: %s", mustJSON(cancelled))
	}
	// An expired claim: the nodes' clocks move a second ahead, and FSM
	// time with the next command's stamp (the fixture does not tick).
	f.created("a short item", f.post("submit", "p1", body("short", map[string]any{"graph_ref": "claims", "work_item_id": "short"})), nil)
	var short workitem.ClaimResult
	f.ok("a 1 ms claim", claim("p1", map[string]any{"ttl_ms": 1, "work_item_id": "short"})(), &short)
	f.c.MoveClock(time.Second)
	f.refused("complete of an expired claim", http.StatusConflict, errs.CodeExpired, "", true, func() reply {
		return f.post("complete", "p1", map[string]any{"tenant_ref": "t", "work_item_id": "short", "attempt": 1, "fence": short.Fence, "outcome": "succeeded"})
	})
}

// reads covers get and list.
func (f *httpFixture) reads() {
	t := f.t
	var got workitem.ItemResult
	f.ok("get", f.get("/v1/workitems/get?tenant_ref=t&work_item_id=solo", "rd"), &got)
	if got.WorkItem.Status != "succeeded" || got.WorkItem.GraphRef != "claims" {
		t.Fatalf("get: %s", mustJSON(got))
	}
	f.refused("get of a missing item", http.StatusNotFound, errs.CodeNotFound, "", false, func() reply {
		return f.get("/v1/workitems/get?tenant_ref=t&work_item_id=nowhere", "rd")
	})
	f.refused("get in another tenant", http.StatusNotFound, errs.CodeNotFound, "", false, func() reply {
		return f.get("/v1/workitems/get?tenant_ref=t&work_item_id=solo", "ou")
	})
	f.refused("an unknown parameter", http.StatusUnprocessableEntity, errs.CodeInvalid, "", false, func() reply {
		return f.get("/v1/workitems/get?tenant_ref=t&work_item_id=solo&agent=me", "rd")
	})
	var page, next workitem.ListResult
	f.ok("a list page of 2", f.get("/v1/workitems/list?tenant_ref=t&limit=2", "rd"), &page)
	if len(page.WorkItems) != 2 || page.NextCursor == "" || page.WorkItems[0].CommandSequence != 1 {
		t.Fatalf("list: %s", mustJSON(page))
	}
	f.ok("the next page", f.get("/v1/workitems/list?tenant_ref=t&limit=2&after="+page.NextCursor, "rd"), &next)
	if len(next.WorkItems) == 0 || next.WorkItems[0].CommandSequence != 3 {
		t.Fatalf("next page: %s", mustJSON(next))
	}
	var byStatus workitem.ListResult
	f.ok("by status", f.get("/v1/workitems/list?tenant_ref=t&graph_ref=claims&status=succeeded", "rd"), &byStatus)
	if len(byStatus.WorkItems) != 1 || byStatus.WorkItems[0].WorkItemID != "solo" {
		t.Fatalf("list by status: %s", mustJSON(byStatus))
	}
	f.refused("limit 129", http.StatusUnprocessableEntity, errs.CodeInvalid, "limit", false, func() reply {
		return f.get("/v1/workitems/list?tenant_ref=t&limit=129", "rd")
	})
	f.refused("limit 0", http.StatusUnprocessableEntity, errs.CodeInvalid, "limit", false, func() reply {
		return f.get("/v1/workitems/list?tenant_ref=t&limit=0", "rd")
	})
	f.refused("a status that is none", http.StatusUnprocessableEntity, errs.CodeInvalid, "status", false, func() reply {
		return f.get("/v1/workitems/list?tenant_ref=t&status=done", "rd")
	})
	f.refused("a cursor of another graph", http.StatusUnprocessableEntity, errs.CodeInvalid, "after", false, func() reply {
		return f.get("/v1/workitems/list?tenant_ref=t&graph_ref=claims&after="+page.NextCursor, "rd")
	})
}

// atTheLimits: every bound at its limit is accepted (201).
func (f *httpFixture) atTheLimits() {
	t := f.t
	var deps []string
	for b := 0; b < workitem.MaxDependencies/workitem.MaxBatch; b++ {
		var res workitem.BatchResult
		f.created("a batch of 128", f.post("submit-batch", "p1", map[string]any{"tenant_ref": "t", "graph_ref": "many",
			"idempotency_key": fmt.Sprintf("seed-%d", b), "requests": children(workitem.MaxBatch, nil)}), &res)
		if len(res.Results) != workitem.MaxBatch || res.BatchSequenceRange.Last-res.BatchSequenceRange.First != workitem.MaxBatch-1 {
			t.Fatalf("batch: %d results, range %+v", len(res.Results), res.BatchSequenceRange)
		}
		for _, r := range res.Results {
			deps = append(deps, r.WorkItemID)
		}
	}
	for what, o := range map[string]map[string]any{
		"priority -1024":            {"priority": -1024},
		"priority 1024":             {"priority": 1024},
		"max_attempts 1":            {"max_attempts": 1},
		"max_attempts 4096":         {"max_attempts": 4096},
		"max_tenant_in_flight 4096": {"max_tenant_in_flight": 4096},
		"1024 dependencies":         {"depends_on": deps},
		"64 provenance refs":        {"provenance_refs": repeat(id512, 64)},
		"input_ref of 1 MiB":        {"input_ref": strings.Repeat("i", workitem.MaxInputRefBytes)},
		"metadata of 64 KiB":        {"metadata": metadataOf(workitem.MaxMetadataBytes)},
		"graph_ref of 512 bytes":    {"graph_ref": id512},
		"work_item_id of 512 bytes": {"work_item_id": "z" + id512[1:]},
		"kind of 512 bytes":         {"kind": id512},
		"idempotency_key 512 bytes": {"idempotency_key": id512},
		"a 512-byte dependency":     {"depends_on": []string{"z" + id512[1:]}},
		"deadline_unix 9999":        {"deadline_unix": workitem.MaxDeadlineUnix},
	} {
		if what == "a 512-byte dependency" {
			continue // after the item it names, below
		}
		f.created(what, f.submit(o)(), nil)
	}
	f.created("a 512-byte dependency", f.submit(map[string]any{"depends_on": []string{"z" + id512[1:]}})(), nil)
	var full workitem.ListResult
	f.ok("a list page of 128", f.get("/v1/workitems/list?tenant_ref=t&graph_ref=many&limit=128", "rd"), &full)
	if len(full.WorkItems) != 128 || full.NextCursor == "" {
		t.Fatalf("a full page: %d items, cursor %q", len(full.WorkItems), full.NextCursor)
	}
	big := body("big", map[string]any{"input_ref": strings.Repeat("i", workitem.MaxInputRefBytes)})
	f.created("a body of exactly 4 MiB", f.post("submit", "p1", padded(t, big, workitem.MaxRequestBytes)), nil)
	quarter := strings.Repeat("q", workitem.MaxInputRefBytes-1000)
	four := map[string]any{"tenant_ref": "t", "idempotency_key": "big-batch", "requests": children(4, map[string]any{"input_ref": quarter})}
	f.created("a batch of exactly 4 MiB", f.post("submit-batch", "p1", padded(t, four, workitem.MaxRequestBytes)), nil)
}
