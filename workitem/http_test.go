package workitem_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
)

// The HTTP tests run a 3-node cluster with authentication on and no
// periodic ticks, so that the log moves only with the test's requests
// and "nothing changed" can be proved by the state hash at an index:
// the content hash (every row but bookkeeping) before and after a
// refused request is the same, and a request the service refuses itself
// does not even reach the log (the same index and state hash).
//
//	ops  tenants *  admin
//	ctl  tenant t   controller
//	p1   tenant t   member
//	p2   tenant t   member
//	rd   tenant t   reader
//	ou   tenant u   member
var httpPrincipals = []identity.PrincipalConfig{
	{ID: "ops", Tenants: []string{"*"}, Roles: []string{log.RoleAdmin}},
	{ID: "ctl", Tenants: []string{"t"}, Roles: []string{log.RoleController}},
	{ID: "p1", Tenants: []string{"t"}, Roles: []string{log.RoleMember}},
	{ID: "p2", Tenants: []string{"t"}, Roles: []string{log.RoleMember}},
	{ID: "rd", Tenants: []string{"t"}, Roles: []string{log.RoleReader}},
	{ID: "ou", Tenants: []string{"u"}, Roles: []string{log.RoleMember}},
}

func httpToken(id string) string { return "workitem-http-token-" + id }

var httpClient = &http.Client{Timeout: 30 * time.Second}

type reply struct {
	status int
	body   []byte
}

// envelope is an error answer.
type envelope struct {
	Error struct {
		Code    errs.Code      `json:"code"`
		Message string         `json:"message"`
		Detail  map[string]any `json:"detail"`
	} `json:"error"`
}

func (r reply) err(t *testing.T) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("status %d with a body that is no error envelope: %s", r.status, r.body)
	}
	return e
}

type httpFixture struct {
	t        *testing.T
	c        *clustertest.Cluster
	base     string // a follower: every write is forwarded
	leader   string
	requests int
}

func newHTTPFixture(t *testing.T) *httpFixture {
	t.Helper()
	var cfgs []identity.PrincipalConfig
	for _, p := range httpPrincipals {
		p.TokenSHA256 = []string{identity.HashToken(httpToken(p.ID))}
		cfgs = append(cfgs, p)
	}
	reg, err := identity.NewRegistry(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Principals: reg, Configure: func(i int, cfg *cluster.Config) {
		cfg.TickInterval = time.Hour // one tick per term, none while the test runs
	}})
	leader := c.WaitLeader(10 * time.Second)
	return &httpFixture{t: t, c: c, base: c.URL((leader + 1) % c.Size()), leader: c.URL(leader)}
}

func (f *httpFixture) do(method, url, who string, body []byte) reply {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+httpToken(who))
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, body: raw}
}

// post sends v (JSON-encoded unless it is []byte) as who.
func (f *httpFixture) post(route, who string, v any) reply {
	f.t.Helper()
	body, ok := v.([]byte)
	if !ok {
		var err error
		if body, err = json.Marshal(v); err != nil {
			f.t.Fatal(err)
		}
	}
	f.requests++
	return f.do(http.MethodPost, f.base+"/v1/workitems/"+route, who, body)
}

func (f *httpFixture) get(path, who string) reply {
	f.t.Helper()
	f.requests++
	return f.do(http.MethodGet, f.base+path, who, nil)
}

func (f *httpFixture) hash() cluster.StateHash {
	f.t.Helper()
	r := f.do(http.MethodGet, f.leader+"/v1/cluster/state-hash", "ops", nil)
	var h cluster.StateHash
	if r.status != http.StatusOK || json.Unmarshal(r.body, &h) != nil || h.Content == "" {
		f.t.Fatalf("state-hash: %d %s", r.status, r.body)
	}
	return h
}

// hashAt is the state hash as of exactly index.
func (f *httpFixture) hashAt(index uint64) cluster.StateHash {
	f.t.Helper()
	r := f.do(http.MethodGet, fmt.Sprintf("%s/v1/cluster/state-hash?index=%d", f.leader, index), "ops", nil)
	var h cluster.StateHash
	if r.status != http.StatusOK || json.Unmarshal(r.body, &h) != nil {
		f.t.Fatalf("state-hash at %d: %d %s", index, r.status, r.body)
	}
	return h
}

// refused requires call's answer to be status and code (and
// detail.field, if set) and proves that nothing changed: the content
// hash at the index after equals the content hash at the index before,
// and when logged is false the request never reached the log at all.
func (f *httpFixture) refused(what string, status int, code errs.Code, field string, logged bool, call func() reply) envelope {
	f.t.Helper()
	before := f.hash()
	r := call()
	after := f.hash()
	if r.status != status {
		f.t.Errorf("%s: %d %s, want %d %s", what, r.status, r.body, status, code)
		return envelope{}
	}
	e := r.err(f.t)
	if e.Error.Code != code {
		f.t.Errorf("%s: code %s (%s), want %s", what, e.Error.Code, e.Error.Message, code)
	}
	if field != "" && e.Error.Detail["field"] != field {
		f.t.Errorf("%s: detail %v, want field %q", what, e.Error.Detail, field)
	}
	if at := f.hashAt(after.Index); at != after || at.Content != before.Content {
		f.t.Errorf("%s changed the state: content %s at index %d, %s at index %d", what, before.Content, before.Index, at.Content, at.Index)
	}
	switch {
	case !logged && after != before:
		f.t.Errorf("%s reached the log: index %d -> %d", what, before.Index, after.Index)
	case logged && after.Index != before.Index+1:
		f.t.Errorf("%s: index %d -> %d, want one entry (the refused command)", what, before.Index, after.Index)
	}
	return e
}

// created requires 201 and decodes the answer.
func (f *httpFixture) created(what string, r reply, out any) {
	f.t.Helper()
	if r.status != http.StatusCreated {
		f.t.Fatalf("%s: %d %s, want 201", what, r.status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			f.t.Fatalf("%s: %v in %s", what, err, r.body)
		}
	}
}

func (f *httpFixture) ok(what string, r reply, out any) {
	f.t.Helper()
	if r.status != http.StatusOK {
		f.t.Fatalf("%s: %d %s, want 200", what, r.status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			f.t.Fatalf("%s: %v in %s", what, err, r.body)
		}
	}
}

// body is a valid submit request as JSON fields; with overrides.
func body(key string, overrides map[string]any) map[string]any {
	b := map[string]any{"tenant_ref": "t", "idempotency_key": key, "command_digest": digest, "kind": "build", "priority": 0,
		"depends_on": []string{}, "input_ref": "in", "policy_digest": "p", "catalog_digest": "c", "model_digest": "m",
		"max_attempts": 3, "metadata": map[string]any{}, "provenance_refs": []string{}, "max_tenant_in_flight": 4096}
	maps.Copy(b, overrides)
	for k, v := range overrides {
		if v == nil {
			delete(b, k)
		}
	}
	return b
}

// child is a batch child without tenant and key.
func child(overrides map[string]any) map[string]any {
	c := body("", nil)
	delete(c, "tenant_ref")
	delete(c, "idempotency_key")
	maps.Copy(c, overrides)
	return c
}

func children(n int, overrides map[string]any) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = child(overrides)
	}
	return out
}

// padded is v as JSON padded with spaces to exactly n bytes.
func padded(t *testing.T, v any, n int) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil || len(b) > n {
		t.Fatalf("padded: %d bytes > %d (%v)", len(b), n, err)
	}
	return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
}

// TestHTTPWorkItems is the HTTP edge test: every bound at its limit and
// one past it, every error code the issue lists, and for every refusal
// proof that nothing changed.
func TestHTTPWorkItems(t *testing.T) {
	f := newHTTPFixture(t)

	// Admission: 201, then 200 replayed for the same request, 409 for
	// another request under the same key.
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
	if f.hash().Content != before.Content {
		t.Fatal("a replay changed the state")
	}
	f.refused("same key, another request", http.StatusConflict, errs.CodeIdempotencyConflict, "", true, func() reply {
		return f.post("submit", "p1", body("k1", map[string]any{"priority": 1}))
	})

	// 1024 items for dependencies, in 8 full batches.
	var deps []string
	for b := 0; b < 8; b++ {
		var res workitem.BatchResult
		f.created("a batch of 128", f.post("submit-batch", "p1", map[string]any{"tenant_ref": "t", "idempotency_key": fmt.Sprintf("seed-%d", b),
			"requests": children(workitem.MaxBatch, nil)}), &res)
		if len(res.Results) != workitem.MaxBatch || res.BatchSequenceRange.Last-res.BatchSequenceRange.First != workitem.MaxBatch-1 {
			t.Fatalf("batch: %d results, range %+v", len(res.Results), res.BatchSequenceRange)
		}
		for _, r := range res.Results {
			deps = append(deps, r.WorkItemID)
		}
	}

	n := 0
	submit := func(o map[string]any) func() reply {
		return func() reply { n++; return f.post("submit", "p1", body(fmt.Sprintf("b%d", n), o)) }
	}
	// Every bound: at the limit accepted (201), one past refused (422,
	// naming the field) before the request reaches the log.
	at := map[string]map[string]any{
		"priority -1024":            {"priority": -1024},
		"priority 1024":             {"priority": 1024},
		"max_attempts 1":            {"max_attempts": 1},
		"max_attempts 4096":         {"max_attempts": 4096},
		"max_tenant_in_flight 4096": {"max_tenant_in_flight": 4096},
		"1024 dependencies":         {"depends_on": deps},
		"64 provenance refs":        {"provenance_refs": repeat(id512, 64)},
		"input_ref of 1 MiB":        {"input_ref": strings.Repeat("i", workitem.MaxInputRefBytes)},
		"metadata of 64 KiB":        {"metadata": metadataOf(workitem.MaxMetadataBytes)},
		"tenant_ref of 512 bytes":   {"tenant_ref": nil},
		"graph_ref of 512 bytes":    {"graph_ref": id512},
		"work_item_id of 512 bytes": {"work_item_id": "z" + id512[1:]},
		"kind of 512 bytes":         {"kind": id512},
		"idempotency_key 512 bytes": {"idempotency_key": id512},
		"policy_digest 512 bytes":   {"policy_digest": id512},
		"catalog_digest 512 bytes":  {"catalog_digest": id512},
		"model_digest 512 bytes":    {"model_digest": id512},
		"deadline_unix 9999":        {"deadline_unix": workitem.MaxDeadlineUnix},
	}
	for what, o := range at {
		if what == "tenant_ref of 512 bytes" {
			continue // the principals' tenants are short; the over-bound case is below
		}
		f.created(what, submit(o)(), nil)
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
		"1025 dependencies":            {"depends_on", map[string]any{"depends_on": append(append([]string{}, deps...), first.WorkItemID)}},
		"65 provenance refs":           {"provenance_refs", map[string]any{"provenance_refs": repeat("p", 65)}},
		"input_ref of 1 MiB + 1":       {"input_ref", map[string]any{"input_ref": strings.Repeat("i", workitem.MaxInputRefBytes+1)}},
		"metadata of 64 KiB + 1":       {"metadata", map[string]any{"metadata": metadataOf(workitem.MaxMetadataBytes + 1)}},
		"tenant_ref of 513 bytes":      {"tenant_ref", map[string]any{"tenant_ref": id513}},
		"graph_ref of 513 bytes":       {"graph_ref", map[string]any{"graph_ref": id513}},
		"work_item_id of 513 bytes":    {"work_item_id", map[string]any{"work_item_id": id513}},
		"kind of 513 bytes":            {"kind", map[string]any{"kind": id513}},
		"idempotency_key of 513 bytes": {"idempotency_key", map[string]any{"idempotency_key": id513}},
		"policy_digest of 513 bytes":   {"policy_digest", map[string]any{"policy_digest": id513}},
		"catalog_digest of 513 bytes":  {"catalog_digest", map[string]any{"catalog_digest": id513}},
		"model_digest of 513 bytes":    {"model_digest", map[string]any{"model_digest": id513}},
		"a dependency of 513 bytes":    {"depends_on[0]", map[string]any{"depends_on": []string{id513}}},
		"a provenance ref of 513":      {"provenance_refs[0]", map[string]any{"provenance_refs": []string{id513}}},
		"deadline_unix 10000-01-01":    {"deadline_unix", map[string]any{"deadline_unix": workitem.MaxDeadlineUnix + 1}},
		"command_digest not sha256":    {"command_digest", map[string]any{"command_digest": "md5:abc"}},
		"metadata an array":            {"metadata", map[string]any{"metadata": []int{1}}},
		"priority not an integer":      {"priority", map[string]any{"priority": 1.5}},
		"an agent in the body":         {"agent", map[string]any{"agent": "me"}},
		"no kind":                      {"kind", map[string]any{"kind": nil}},
	}
	for what, c := range over {
		f.refused(what, http.StatusUnprocessableEntity, errs.CodeInvalid, c.field, false, submit(c.o))
	}

	// The body limit is 4 MiB for the admission routes only.
	big := body("big", map[string]any{"input_ref": strings.Repeat("i", workitem.MaxInputRefBytes)})
	f.created("a body of exactly 4 MiB", f.post("submit", "p1", padded(t, big, workitem.MaxRequestBytes)), nil)
	big["idempotency_key"] = "big-2"
	f.refused("a body of 4 MiB + 1", http.StatusRequestEntityTooLarge, errs.CodeTooLarge, "", false, func() reply {
		return f.post("submit", "p1", padded(t, big, workitem.MaxRequestBytes+1))
	})
	quarter := strings.Repeat("q", workitem.MaxInputRefBytes-1000)
	fourChildren := map[string]any{"tenant_ref": "t", "idempotency_key": "big-batch", "requests": children(4, map[string]any{"input_ref": quarter})}
	f.created("a batch of exactly 4 MiB", f.post("submit-batch", "p1", padded(t, fourChildren, workitem.MaxRequestBytes)), nil)
	fourChildren["idempotency_key"] = "big-batch-2"
	f.refused("a batch of 4 MiB + 1", http.StatusRequestEntityTooLarge, errs.CodeTooLarge, "", false, func() reply {
		return f.post("submit-batch", "p1", padded(t, fourChildren, workitem.MaxRequestBytes+1))
	})
	f.refused("a claim body over 1 MiB", http.StatusRequestEntityTooLarge, errs.CodeTooLarge, "", false, func() reply {
		return f.post("claim", "p1", padded(t, map[string]any{"tenant_ref": "t", "owner_ref": "w", "ttl_ms": 1000}, 1<<20+1))
	})

	// Batches: 1 and 128 children accepted (above); 0, 129, another
	// tenant or graph in a child: 422.
	batch := func(key string, kids []map[string]any) func() reply {
		return func() reply {
			return f.post("submit-batch", "p1", map[string]any{"tenant_ref": "t", "idempotency_key": key, "requests": kids})
		}
	}
	f.created("a batch of 1", batch("one", children(1, nil))(), nil)
	f.refused("a batch of 0", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests", false, batch("zero", children(0, nil)))
	f.refused("a batch of 129", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests", false, batch("over", children(workitem.MaxBatch+1, nil)))
	f.refused("a child of another tenant", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[1].tenant_ref", false,
		batch("tenant", []map[string]any{child(nil), child(map[string]any{"tenant_ref": "u"})}))
	f.refused("a child of another graph", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[0].graph_ref", false,
		batch("graph", []map[string]any{child(map[string]any{"graph_ref": "g2"})}))
	var chained workitem.BatchResult
	f.created("a child depending on an earlier one", batch("chain", []map[string]any{
		child(map[string]any{"work_item_id": "chain-a"}), child(map[string]any{"depends_on": []string{"chain-a"}}),
	})(), &chained)
	if chained.Results[1].Dependencies != (workitem.Dependencies{Total: 1}) {
		t.Fatalf("chained batch: %s", mustJSON(chained))
	}
	var replayedBatch workitem.BatchResult
	f.ok("a batch replayed", batch("chain", []map[string]any{
		child(map[string]any{"work_item_id": "chain-a"}), child(map[string]any{"depends_on": []string{"chain-a"}}),
	})(), &replayedBatch)
	if !replayedBatch.Replayed || !replayedBatch.Results[1].Replayed || replayedBatch.BatchSequenceRange != chained.BatchSequenceRange ||
		replayedBatch.Results[1].WorkItemID != chained.Results[1].WorkItemID {
		t.Fatalf("batch replay: %s", mustJSON(replayedBatch))
	}
	f.refused("a batch whose last child names a missing dependency", http.StatusUnprocessableEntity, errs.CodeInvalid, "requests[2].depends_on[0]", true,
		batch("late", []map[string]any{child(nil), child(nil), child(map[string]any{"depends_on": []string{"nowhere"}})}))

	// Dependencies: missing and another tenant's answer the same.
	var uItem workitem.SubmitResult
	f.created("an item of tenant u", f.post("submit", "ou", body("u1", map[string]any{"tenant_ref": "u", "work_item_id": "u-only"})), &uItem)
	missing := f.refused("a missing dependency", http.StatusUnprocessableEntity, errs.CodeInvalid, "depends_on[0]", true,
		submit(map[string]any{"depends_on": []string{"u-onlx"}}))
	foreign := f.refused("another tenant's dependency", http.StatusUnprocessableEntity, errs.CodeInvalid, "depends_on[0]", true,
		submit(map[string]any{"depends_on": []string{"u-only"}}))
	missing.Error.Message = strings.ReplaceAll(missing.Error.Message, "u-onlx", "u-only")
	missing.Error.Detail["work_item_id"] = "u-only"
	if mustJSON(missing) != mustJSON(foreign) || foreign.Error.Detail["reason"] != "dependency_missing" {
		t.Errorf("another tenant's item answers otherwise than a missing one:\n  %s\n  %s", mustJSON(missing), mustJSON(foreign))
	}
	f.refused("an id that exists", http.StatusConflict, errs.CodeConflict, "work_item_id", true, submit(map[string]any{"work_item_id": "chain-a"}))
	f.refused("a deadline that has passed", http.StatusUnprocessableEntity, errs.CodeInvalid, "deadline_unix", true,
		submit(map[string]any{"deadline_unix": time.Now().Unix() - 60}))

	// The in-flight cap: 409 exhausted with the count and the cap.
	capped := f.refused("the tenant at its cap", http.StatusConflict, errs.CodeExhausted, "", true, submit(map[string]any{"max_tenant_in_flight": 5}))
	if capped.Error.Detail["cap"] != float64(5) || capped.Error.Detail["in_flight"].(float64) < 1000 {
		t.Errorf("exhausted detail %v", capped.Error.Detail)
	}

	// Identity: no credential 401; a reader or another tenant 403.
	f.refused("no credential", http.StatusUnauthorized, errs.CodeUnauthorized, "", false, func() reply { return f.post("submit", "", body("anon", nil)) })
	f.refused("a reader submits", http.StatusForbidden, errs.CodeForbidden, "", true, func() reply { return f.post("submit", "rd", body("rd", nil)) })
	f.refused("another tenant", http.StatusForbidden, errs.CodeForbidden, "", true, func() reply { return f.post("submit", "ou", body("ou", nil)) })

	f.claims(deps)
	f.reads()
	t.Logf("%d requests", f.requests)
}

// claims covers claim, complete and cancel over HTTP.
func (f *httpFixture) claims(deps []string) {
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
	f.ok("complete", done(holder, map[string]any{"result_ref": strings.Repeat("r", workitem.MaxResultRefBytes)})(), &ended)
	if ended.WorkItem.Status != "succeeded" {
		t.Fatalf("complete: %s", mustJSON(ended))
	}
	f.refused("cancel of a succeeded item", http.StatusConflict, errs.CodeConflict, "", true, func() reply {
		return f.post("cancel", "p1", map[string]any{"tenant_ref": "t", "work_item_id": "solo", "reason": "late"})
	})
	f.refused("cancel without a reason", http.StatusUnprocessableEntity, errs.CodeInvalid, "reason", false, func() reply {
		return f.post("cancel", "p1", map[string]any{"tenant_ref": "t", "work_item_id": deps[0]})
	})
	var cancelled workitem.ItemResult
	f.ok("cancel", f.post("cancel", "p2", map[string]any{"tenant_ref": "t", "work_item_id": deps[0], "reason": "operator"}), &cancelled)
	if cancelled.WorkItem.Status != "cancelled" || cancelled.WorkItem.Reason != "operator" {
		t.Fatalf("cancel: %s", mustJSON(cancelled))
	}
	// An expired claim: FSM time moves with the next command's stamp.
	f.created("a short item", f.post("submit", "p1", body("short", map[string]any{"graph_ref": "claims", "work_item_id": "short"})), nil)
	var short workitem.ClaimResult
	f.ok("a 1 ms claim", claim("p1", map[string]any{"ttl_ms": 1, "work_item_id": "short"})(), &short)
	time.Sleep(5 * time.Millisecond)
	f.refused("complete of an expired claim", http.StatusConflict, errs.CodeExpired, "", true, func() reply {
		return f.post("complete", "p1", map[string]any{"tenant_ref": "t", "work_item_id": "short", "attempt": 1, "fence": short.Fence, "outcome": "succeeded"})
	})
}

// reads covers get and list over HTTP.
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
	f.refused("get in another tenant", http.StatusForbidden, errs.CodeForbidden, "", false, func() reply {
		return f.get("/v1/workitems/get?tenant_ref=t&work_item_id=solo", "ou")
	})
	f.refused("an unknown parameter", http.StatusUnprocessableEntity, errs.CodeInvalid, "", false, func() reply {
		return f.get("/v1/workitems/get?tenant_ref=t&work_item_id=solo&agent=me", "rd")
	})
	var page workitem.ListResult
	f.ok("a list page of 128", f.get("/v1/workitems/list?tenant_ref=t&limit=128", "rd"), &page)
	if len(page.WorkItems) != 128 || page.NextCursor == "" || page.WorkItems[0].CommandSequence != 1 {
		t.Fatalf("list: %d items, cursor %q", len(page.WorkItems), page.NextCursor)
	}
	var next workitem.ListResult
	f.ok("the next page", f.get("/v1/workitems/list?tenant_ref=t&limit=128&after="+page.NextCursor, "rd"), &next)
	if len(next.WorkItems) == 0 || next.WorkItems[0].CommandSequence != 129 {
		t.Fatalf("next page starts at %+v", next.WorkItems[:1])
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
	f.refused("a cursor of another graph", http.StatusUnprocessableEntity, errs.CodeInvalid, "after", false, func() reply {
		return f.get("/v1/workitems/list?tenant_ref=t&graph_ref=claims&after="+page.NextCursor, "rd")
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
