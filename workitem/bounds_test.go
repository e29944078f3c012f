package workitem_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
)

var (
	id512 = strings.Repeat("y", 512)
	id513 = strings.Repeat("y", 513)
)

// metadataOf is a metadata object of exactly n bytes in canonical form.
func metadataOf(n int) json.RawMessage {
	return json.RawMessage(`{"k":"` + strings.Repeat("m", n-8) + `"}`)
}

// boundsFixture is a service over a fresh FSM holding 1024 items (ids
// d0000..d1023, one of them id512) that requests may depend on.
type boundsFixture struct {
	l    *fsmtest.Local
	s    *workitem.Service
	deps []string
}

func newBoundsFixture(t *testing.T) *boundsFixture {
	t.Helper()
	l, s := newService(t)
	f := &boundsFixture{l: l, s: s}
	for b := 0; b < workitem.MaxDependencies/workitem.MaxBatch; b++ {
		batch := workitem.BatchRequest{TenantRef: "t", IdempotencyKey: fmt.Sprintf("seed-%d", b)}
		for i := 0; i < workitem.MaxBatch; i++ {
			c := req("")
			c.IdempotencyKey, c.MaxTenantInFlight = "", workitem.MaxTenantInFlight
			c.WorkItemID = fmt.Sprintf("d%04d", b*workitem.MaxBatch+i)
			if b == 0 && i == 0 {
				c.WorkItemID = id512
			}
			batch.Requests = append(batch.Requests, c)
			f.deps = append(f.deps, c.WorkItemID)
		}
		if _, err := s.SubmitBatch(bg, batch); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// refused requires call to fail with code (and detail.field, if set),
// proposing nothing when the service must refuse it itself, and
// changing no row.
func (f *boundsFixture) refused(t *testing.T, what string, code errs.Code, field string, proposed bool, call func() (any, error)) {
	t.Helper()
	entries := len(f.l.Log())
	before := ""
	if proposed { // otherwise an unchanged log proves it (and hashing is slow under -race)
		before = contentHash(t, f.l.FSM)
	}
	_, err := call()
	e := errs.From(err)
	if e == nil || e.Code != code {
		t.Errorf("%s: %v, want %s", what, err, code)
	} else if field != "" && e.Detail["field"] != field {
		t.Errorf("%s: %v with detail %v, want field %q", what, err, e.Detail, field)
	}
	if n := len(f.l.Log()) - entries; n != 0 && !proposed {
		t.Errorf("%s: the service proposed %d command(s) for a request it must refuse itself", what, n)
	}
	if proposed && contentHash(t, f.l.FSM) != before {
		t.Errorf("%s: the state changed", what)
	}
}

// accepted requires call to succeed.
func (f *boundsFixture) accepted(t *testing.T, what string, call func() (any, error)) {
	t.Helper()
	if _, err := call(); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// TestSubmitBounds: every bound of a submit at its limit is accepted and
// one past it is invalid, naming the field, before anything is proposed.
func TestSubmitBounds(t *testing.T) {
	f := newBoundsFixture(t)
	n := 0
	submit := func(change func(*workitem.SubmitRequest)) func() (any, error) {
		return func() (any, error) {
			n++
			r := req(fmt.Sprintf("b%d", n))
			r.MaxTenantInFlight = workitem.MaxTenantInFlight
			change(&r)
			return f.s.Submit(bg, r)
		}
	}
	ok := map[string]func(*workitem.SubmitRequest){
		"priority -1024":            func(r *workitem.SubmitRequest) { r.Priority = -workitem.MaxPriority },
		"priority 1024":             func(r *workitem.SubmitRequest) { r.Priority = workitem.MaxPriority },
		"max_attempts 1":            func(r *workitem.SubmitRequest) { r.MaxAttempts = 1 },
		"max_attempts 4096":         func(r *workitem.SubmitRequest) { r.MaxAttempts = workitem.MaxAttempts },
		"1024 dependencies":         func(r *workitem.SubmitRequest) { r.DependsOn = f.deps },
		"64 provenance refs":        func(r *workitem.SubmitRequest) { r.ProvenanceRefs = repeat(id512, 64) },
		"input_ref of 1 MiB":        func(r *workitem.SubmitRequest) { r.InputRef = strings.Repeat("i", workitem.MaxInputRefBytes) },
		"metadata of 64 KiB":        func(r *workitem.SubmitRequest) { r.Metadata = metadataOf(workitem.MaxMetadataBytes) },
		"padded metadata":           func(r *workitem.SubmitRequest) { r.Metadata = json.RawMessage(" { \"a\" : 1.0 } ") },
		"null metadata":             func(r *workitem.SubmitRequest) { r.Metadata = json.RawMessage("null") },
		"a 512-byte dependency":     func(r *workitem.SubmitRequest) { r.DependsOn = []string{id512} },
		"deadline_unix 9999-12-31":  func(r *workitem.SubmitRequest) { d := int64(workitem.MaxDeadlineUnix); r.DeadlineUnix = &d },
		"tenant_ref of 512 bytes":   func(r *workitem.SubmitRequest) { r.TenantRef = id512 },
		"graph_ref of 512 bytes":    func(r *workitem.SubmitRequest) { r.GraphRef = id512 },
		"work_item_id of 512 bytes": func(r *workitem.SubmitRequest) { r.WorkItemID = "z" + id512[1:] },
		"kind of 512 bytes":         func(r *workitem.SubmitRequest) { r.Kind = id512 },
		"idempotency key 512 bytes": func(r *workitem.SubmitRequest) { r.IdempotencyKey = id512 },
	}
	cap1 := req("cap-1")
	cap1.MaxTenantInFlight = 1
	f.refused(t, "max_tenant_in_flight 1 with items in flight", errs.CodeExhausted, "", true, func() (any, error) { return f.s.Submit(bg, cap1) })

	bad := map[string]struct {
		field  string
		change func(*workitem.SubmitRequest)
	}{
		"priority -1025":             {"priority", func(r *workitem.SubmitRequest) { r.Priority = -workitem.MaxPriority - 1 }},
		"priority 1025":              {"priority", func(r *workitem.SubmitRequest) { r.Priority = workitem.MaxPriority + 1 }},
		"max_attempts 0":             {"max_attempts", func(r *workitem.SubmitRequest) { r.MaxAttempts = 0 }},
		"max_attempts 4097":          {"max_attempts", func(r *workitem.SubmitRequest) { r.MaxAttempts = workitem.MaxAttempts + 1 }},
		"max_tenant_in_flight 0":     {"max_tenant_in_flight", func(r *workitem.SubmitRequest) { r.MaxTenantInFlight = 0 }},
		"max_tenant_in_flight 4097":  {"max_tenant_in_flight", func(r *workitem.SubmitRequest) { r.MaxTenantInFlight = workitem.MaxTenantInFlight + 1 }},
		"1025 dependencies":          {"depends_on", func(r *workitem.SubmitRequest) { r.DependsOn = append(append([]string{}, f.deps...), "x") }},
		"a dependency twice":         {"depends_on[1]", func(r *workitem.SubmitRequest) { r.DependsOn = []string{"d0001", "d0001"} }},
		"65 provenance refs":         {"provenance_refs", func(r *workitem.SubmitRequest) { r.ProvenanceRefs = repeat("p", 65) }},
		"input_ref of 1 MiB + 1":     {"input_ref", func(r *workitem.SubmitRequest) { r.InputRef = strings.Repeat("i", workitem.MaxInputRefBytes+1) }},
		"empty input_ref":            {"input_ref", func(r *workitem.SubmitRequest) { r.InputRef = "" }},
		"input_ref not UTF-8":        {"input_ref", func(r *workitem.SubmitRequest) { r.InputRef = "a\xff" }},
		"metadata of 64 KiB + 1":     {"metadata", func(r *workitem.SubmitRequest) { r.Metadata = metadataOf(workitem.MaxMetadataBytes + 1) }},
		"metadata an array":          {"metadata", func(r *workitem.SubmitRequest) { r.Metadata = json.RawMessage(`[1]`) }},
		"metadata not JSON":          {"metadata", func(r *workitem.SubmitRequest) { r.Metadata = json.RawMessage(`{"a":`) }},
		"deadline_unix 0":            {"deadline_unix", func(r *workitem.SubmitRequest) { d := int64(0); r.DeadlineUnix = &d }},
		"deadline_unix 10000-01-01":  {"deadline_unix", func(r *workitem.SubmitRequest) { d := int64(workitem.MaxDeadlineUnix + 1); r.DeadlineUnix = &d }},
		"command_digest uppercase":   {"command_digest", func(r *workitem.SubmitRequest) { r.CommandDigest = strings.ToUpper(digest) }},
		"command_digest 63 hex":      {"command_digest", func(r *workitem.SubmitRequest) { r.CommandDigest = digest[:len(digest)-1] }},
		"command_digest sha1":        {"command_digest", func(r *workitem.SubmitRequest) { r.CommandDigest = "sha1:" + strings.Repeat("a", 40) }},
		"tenant_ref of 513 bytes":    {"tenant_ref", func(r *workitem.SubmitRequest) { r.TenantRef = id513 }},
		"empty tenant_ref":           {"tenant_ref", func(r *workitem.SubmitRequest) { r.TenantRef = "" }},
		"graph_ref of 513 bytes":     {"graph_ref", func(r *workitem.SubmitRequest) { r.GraphRef = id513 }},
		"work_item_id of 513 bytes":  {"work_item_id", func(r *workitem.SubmitRequest) { r.WorkItemID = id513 }},
		"work_item_id wi-":           {"work_item_id", func(r *workitem.SubmitRequest) { r.WorkItemID = "wi-1-0" }},
		"kind of 513 bytes":          {"kind", func(r *workitem.SubmitRequest) { r.Kind = id513 }},
		"empty kind":                 {"kind", func(r *workitem.SubmitRequest) { r.Kind = "" }},
		"kind with a newline":        {"kind", func(r *workitem.SubmitRequest) { r.Kind = "a\nb" }},
		"policy_digest of 513 bytes": {"policy_digest", func(r *workitem.SubmitRequest) { r.PolicyDigest = id513 }},
		"empty catalog_digest":       {"catalog_digest", func(r *workitem.SubmitRequest) { r.CatalogDigest = "" }},
		"model_digest of 513 bytes":  {"model_digest", func(r *workitem.SubmitRequest) { r.ModelDigest = id513 }},
		"policy_digest hello":        {"policy_digest", func(r *workitem.SubmitRequest) { r.PolicyDigest = "hello" }},
		"catalog_digest uppercase":   {"catalog_digest", func(r *workitem.SubmitRequest) { r.CatalogDigest = strings.ToUpper(catalogDigest) }},
		"model_digest sha1":          {"model_digest", func(r *workitem.SubmitRequest) { r.ModelDigest = "sha1:" + strings.Repeat("a", 40) }},
		"idempotency key 513 bytes":  {"idempotency_key", func(r *workitem.SubmitRequest) { r.IdempotencyKey = id513 }},
		"no idempotency key":         {"idempotency_key", func(r *workitem.SubmitRequest) { r.IdempotencyKey = "" }},
		"a 513-byte dependency":      {"depends_on[0]", func(r *workitem.SubmitRequest) { r.DependsOn = []string{id513} }},
		"a 513-byte provenance ref":  {"provenance_refs[1]", func(r *workitem.SubmitRequest) { r.ProvenanceRefs = []string{"p", id513} }},
	}
	for what, c := range bad {
		f.refused(t, what, errs.CodeInvalid, c.field, false, submit(c.change))
	}
	// Decided by the FSM: the state is needed.
	for what, c := range map[string]struct {
		reason string
		change func(*workitem.SubmitRequest)
	}{
		"a missing dependency":        {"dependency_missing", func(r *workitem.SubmitRequest) { r.DependsOn = []string{"d0001", "nowhere"} }},
		"another tenant's dependency": {"dependency_missing", func(r *workitem.SubmitRequest) { r.TenantRef = "u"; r.DependsOn = []string{"d0001"} }},
		"a deadline that has passed":  {"", func(r *workitem.SubmitRequest) { d := fsmtest.Epoch / 1000; r.DeadlineUnix = &d }},
		"a dependency on itself":      {"dependency_missing", func(r *workitem.SubmitRequest) { r.WorkItemID = "self"; r.DependsOn = []string{"self"} }},
	} {
		f.refused(t, what, errs.CodeInvalid, "", true, func() (any, error) {
			res, err := submit(c.change)()
			if e := errs.From(err); e != nil && c.reason != "" && e.Detail["reason"] != c.reason {
				t.Errorf("%s: %v with detail %v, want reason %s", what, err, e.Detail, c.reason)
			}
			return res, err
		})
	}
	f.refused(t, "an id that exists", errs.CodeConflict, "work_item_id", true, submit(func(r *workitem.SubmitRequest) { r.WorkItemID = "d0001" }))
	// The acceptances last: their large rows would slow every state hash
	// the refusals above take.
	for what, change := range ok {
		f.accepted(t, what, submit(change))
	}
	checkInvariants(t, f.l.FSM)
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestBatchBounds: 1 and 128 children are accepted, 0 and 129 are not; a
// child of another tenant or graph is invalid; an encoded batch above
// MaxPayloadBytes is too_large; any failing child leaves nothing.
func TestBatchBounds(t *testing.T) {
	f := newBoundsFixture(t)
	batch := func(key string, n int, change func(i int, c *workitem.SubmitRequest)) workitem.BatchRequest {
		b := workitem.BatchRequest{TenantRef: "t", IdempotencyKey: key}
		for i := 0; i < n; i++ {
			c := req("")
			c.IdempotencyKey, c.MaxTenantInFlight = "", workitem.MaxTenantInFlight
			if change != nil {
				change(i, &c)
			}
			b.Requests = append(b.Requests, c)
		}
		return b
	}
	call := func(b workitem.BatchRequest) func() (any, error) {
		return func() (any, error) { return f.s.SubmitBatch(bg, b) }
	}
	f.accepted(t, "1 child", call(batch("one", 1, nil)))
	f.accepted(t, "128 children", call(batch("full", workitem.MaxBatch, nil)))
	f.accepted(t, "children naming the parent's scope", call(batch("scoped", 2, func(i int, c *workitem.SubmitRequest) {
		c.TenantRef, c.GraphRef = "t", workitem.DefaultGraph
	})))
	f.refused(t, "0 children", errs.CodeInvalid, "requests", false, call(batch("none", 0, nil)))
	f.refused(t, "129 children", errs.CodeInvalid, "requests", false, call(batch("over", workitem.MaxBatch+1, nil)))
	f.refused(t, "a child of another tenant", errs.CodeInvalid, "requests[1].tenant_ref", false, call(batch("tenant", 2, func(i int, c *workitem.SubmitRequest) {
		if i == 1 {
			c.TenantRef = "u"
		}
	})))
	f.refused(t, "a child of another graph", errs.CodeInvalid, "requests[0].graph_ref", false, call(batch("graph", 2, func(i int, c *workitem.SubmitRequest) {
		c.GraphRef = "g2"
	})))
	f.refused(t, "a child's bound", errs.CodeInvalid, "requests[2].priority", false, call(batch("prio", 3, func(i int, c *workitem.SubmitRequest) {
		c.Priority = int64(i) * 1000
	})))
	f.refused(t, "two children of one id", errs.CodeInvalid, "requests[1].work_item_id", false, call(batch("dup", 2, func(i int, c *workitem.SubmitRequest) {
		c.WorkItemID = "same"
	})))
	f.refused(t, "an encoded batch over 4 MiB", errs.CodeTooLarge, "", false, call(batch("big", 5, func(i int, c *workitem.SubmitRequest) {
		c.InputRef = strings.Repeat("i", workitem.MaxInputRefBytes)
	})))
	// The last child fails in the FSM: none of the others is admitted.
	f.refused(t, "a last child with a missing dependency", errs.CodeInvalid, "requests[3].depends_on[0]", true, call(batch("late", 4, func(i int, c *workitem.SubmitRequest) {
		if i == 3 {
			c.DependsOn = []string{"nowhere"}
		}
	})))
	f.refused(t, "a child depending on a later one", errs.CodeInvalid, "requests[0].depends_on[0]", true, call(batch("forward", 2, func(i int, c *workitem.SubmitRequest) {
		c.WorkItemID = fmt.Sprintf("fw%d", i)
		if i == 0 {
			c.DependsOn = []string{"fw1"}
		}
	})))
	checkInvariants(t, f.l.FSM)
}

// TestClaimCompleteCancelListBounds covers the other requests' bounds.
func TestClaimCompleteCancelListBounds(t *testing.T) {
	f := newBoundsFixture(t)
	claim := func(change func(*workitem.ClaimRequest)) func() (any, error) {
		return func() (any, error) {
			r := claimReq("w")
			change(&r)
			return f.s.Claim(bg, r)
		}
	}
	f.accepted(t, "ttl 1 ms", claim(func(r *workitem.ClaimRequest) { r.TTLMs = 1 }))
	f.accepted(t, "ttl 24 h", claim(func(r *workitem.ClaimRequest) { r.TTLMs = workitem.MaxTTL.Milliseconds() }))
	f.accepted(t, "16 kinds", claim(func(r *workitem.ClaimRequest) { r.Kinds = kinds(workitem.MaxKinds) }))
	f.accepted(t, "owner_ref of 512 bytes", claim(func(r *workitem.ClaimRequest) { r.OwnerRef = id512 }))
	for what, c := range map[string]struct {
		field  string
		change func(*workitem.ClaimRequest)
	}{
		"ttl 0":                  {"ttl_ms", func(r *workitem.ClaimRequest) { r.TTLMs = 0 }},
		"ttl 24 h + 1 ms":        {"ttl_ms", func(r *workitem.ClaimRequest) { r.TTLMs = workitem.MaxTTL.Milliseconds() + 1 }},
		"17 kinds":               {"kinds", func(r *workitem.ClaimRequest) { r.Kinds = kinds(workitem.MaxKinds + 1) }},
		"a kind twice":           {"kinds", func(r *workitem.ClaimRequest) { r.Kinds = []string{"a", "a"} }},
		"owner_ref of 513 bytes": {"owner_ref", func(r *workitem.ClaimRequest) { r.OwnerRef = id513 }},
		"no owner_ref":           {"owner_ref", func(r *workitem.ClaimRequest) { r.OwnerRef = "" }},
		"a 513-byte key":         {"idempotency_key", func(r *workitem.ClaimRequest) { r.IdempotencyKey = id513 }},
	} {
		f.refused(t, what, errs.CodeInvalid, c.field, false, claim(c.change))
	}
	c := mustClaim(t, f.s, claimReq("w"))
	complete := func(change func(*workitem.CompleteRequest)) func() (any, error) {
		return func() (any, error) {
			r := workitem.CompleteRequest{TenantRef: "t", WorkItemID: c.WorkItem.WorkItemID, Attempt: c.Attempt, Fence: c.Fence, Outcome: workitem.StatusSucceeded}
			change(&r)
			return f.s.Complete(bg, r)
		}
	}
	for what, c := range map[string]struct {
		field  string
		change func(*workitem.CompleteRequest)
	}{
		"attempt 0":             {"attempt", func(r *workitem.CompleteRequest) { r.Attempt = 0 }},
		"fence 0":               {"fence", func(r *workitem.CompleteRequest) { r.Fence = 0 }},
		"outcome cancelled":     {"outcome", func(r *workitem.CompleteRequest) { r.Outcome = workitem.StatusCancelled }},
		"result_ref 64 KiB + 1": {"result_ref", func(r *workitem.CompleteRequest) { r.ResultRef = strings.Repeat("r", workitem.MaxResultRefBytes+1) }},
		"a 513-byte id":         {"work_item_id", func(r *workitem.CompleteRequest) { r.WorkItemID = id513 }},
	} {
		f.refused(t, what, errs.CodeInvalid, c.field, false, complete(c.change))
	}
	f.refused(t, "a wrong attempt", errs.CodeStaleFence, "", true, complete(func(r *workitem.CompleteRequest) { r.Attempt++ }))
	f.refused(t, "a missing item", errs.CodeNotFound, "", true, complete(func(r *workitem.CompleteRequest) { r.WorkItemID = "nowhere" }))
	f.accepted(t, "result_ref of 64 KiB", complete(func(r *workitem.CompleteRequest) { r.ResultRef = strings.Repeat("r", workitem.MaxResultRefBytes) }))
	f.refused(t, "a cancel without a reason", errs.CodeInvalid, "reason", false, func() (any, error) {
		return f.s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: "d0001"})
	})
	f.refused(t, "a 513-byte reason", errs.CodeInvalid, "reason", false, func() (any, error) {
		return f.s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: "d0001", Reason: id513})
	})
	f.refused(t, "cancelling a succeeded item", errs.CodeConflict, "", true, func() (any, error) {
		return f.s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: c.WorkItem.WorkItemID, Reason: "late"})
	})
	list := func(r workitem.ListRequest) func() (any, error) {
		return func() (any, error) { return f.s.List(bg, r, fsm.Linearizable) }
	}
	page, err := f.s.List(bg, workitem.ListRequest{TenantRef: "t", Limit: workitem.MaxPage}, fsm.Linearizable)
	if err != nil || len(page.WorkItems) != workitem.MaxPage || page.NextCursor == "" {
		t.Fatalf("a full page: %d items, cursor %q, %v", len(page.WorkItems), page.NextCursor, err)
	}
	f.refused(t, "limit 129", errs.CodeInvalid, "limit", false, list(workitem.ListRequest{TenantRef: "t", Limit: workitem.MaxPage + 1}))
	f.refused(t, "limit -1", errs.CodeInvalid, "limit", false, list(workitem.ListRequest{TenantRef: "t", Limit: -1}))
	f.refused(t, "an unknown status", errs.CodeInvalid, "status", false, list(workitem.ListRequest{TenantRef: "t", Status: "done"}))
	f.refused(t, "a cursor of another status", errs.CodeInvalid, "after", true, list(workitem.ListRequest{TenantRef: "t", Status: workitem.StatusPending, After: page.NextCursor}))
	f.refused(t, "a cursor of another tenant", errs.CodeInvalid, "after", true, list(workitem.ListRequest{TenantRef: "u", After: page.NextCursor}))
	f.refused(t, "a forged cursor", errs.CodeInvalid, "after", true, list(workitem.ListRequest{TenantRef: "t", After: "list.AAAAAAAAAAAAAA"}))
	next, err := f.s.List(bg, workitem.ListRequest{TenantRef: "t", After: page.NextCursor}, fsm.Linearizable)
	if err != nil || len(next.WorkItems) == 0 || next.WorkItems[0].CommandSequence != page.WorkItems[len(page.WorkItems)-1].CommandSequence+1 {
		t.Fatalf("the next page: %+v %v", next, err)
	}
}

func kinds(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("kind-%d", i)
	}
	out[n-1] = "build" // the kind of the fixture's items
	return out
}

// rawSubmit mirrors the payload of a single submit, so a test can send
// what the service would refuse to build.
type rawSubmit struct {
	TenantRef string  `msgpack:"tenant_ref"`
	GraphRef  string  `msgpack:"graph_ref"`
	Item      rawItem `msgpack:"item"`
}

type rawItem struct {
	WorkItemID        string   `msgpack:"work_item_id"`
	IdempotencyKey    string   `msgpack:"idempotency_key"`
	CommandDigest     string   `msgpack:"command_digest"`
	Kind              string   `msgpack:"kind"`
	Priority          int64    `msgpack:"priority"`
	DependsOn         []string `msgpack:"depends_on"`
	InputRef          string   `msgpack:"input_ref"`
	PolicyDigest      string   `msgpack:"policy_digest"`
	CatalogDigest     string   `msgpack:"catalog_digest"`
	ModelDigest       string   `msgpack:"model_digest"`
	MaxAttempts       int64    `msgpack:"max_attempts"`
	DeadlineUnix      *int64   `msgpack:"deadline_unix"`
	Metadata          []byte   `msgpack:"metadata"`
	ProvenanceRefs    []string `msgpack:"provenance_refs"`
	MaxTenantInFlight int64    `msgpack:"max_tenant_in_flight"`
}

func validRaw() rawSubmit {
	return rawSubmit{TenantRef: "t", GraphRef: "default", Item: rawItem{CommandDigest: digest, Kind: "k", InputRef: "i", PolicyDigest: policyDigest,
		CatalogDigest: catalogDigest, ModelDigest: modelDigest, MaxAttempts: 1, Metadata: []byte("{}"), MaxTenantInFlight: 10}}
}

// scopeOf is the service's idempotency scope of an admission in the
// cluster r reads (nil: one whose enabled set cannot be read).
func scopeOf(r fsm.Reader, tenant, graph string) string {
	cmd, _ := captureEnvelope(r, tenant, graph)
	return cmd.IdemScope
}

// captureEnvelope learns the envelope the service builds for a submit
// in the cluster r reads.
func captureEnvelope(r fsm.Reader, tenant, graph string) (log.Command, error) {
	var got log.Command
	p := proposerFunc(func(cmd log.Command) (*fsm.Response, error) {
		got = cmd
		return &fsm.Response{Err: errs.New(errs.CodeUnavailable, "captured")}, nil
	})
	rq := req("capture")
	rq.TenantRef, rq.GraphRef = tenant, graph
	_, err := workitem.NewService(p, r).Submit(bg, rq)
	return got, err
}

// TestApplyValidatesAgain: the FSM refuses what the service would not
// send, changing nothing.
func TestApplyValidatesAgain(t *testing.T) {
	l, _ := newService(t)
	propose := func(what string, typ log.Type, scope, key string, payload any, code errs.Code) {
		t.Helper()
		before := contentHash(t, l.FSM)
		body := log.MustMarshal(payload)
		res, err := l.Propose(bg, log.Command{Type: typ, Version: 1, IdemScope: scope, IdemKey: key, Payload: body})
		if err != nil || res.Err == nil || res.Err.Code != code {
			t.Errorf("%s: %v %v, want %s", what, err, res.Err, code)
		}
		if contentHash(t, l.FSM) != before {
			t.Errorf("%s: the state changed", what)
		}
	}
	scope := scopeOf(l, "t", "default")
	for what, change := range map[string]func(*rawSubmit){
		"priority 1025":          func(r *rawSubmit) { r.Item.Priority = 1025 },
		"non-canonical metadata": func(r *rawSubmit) { r.Item.Metadata = []byte(`{ "a":1}`) },
		"metadata an array":      func(r *rawSubmit) { r.Item.Metadata = []byte(`[]`) },
		"no metadata":            func(r *rawSubmit) { r.Item.Metadata = nil },
		"an empty graph":         func(r *rawSubmit) { r.GraphRef = "" },
		"a child's key":          func(r *rawSubmit) { r.Item.IdempotencyKey = "k" },
		"deadline_unix -5":       func(r *rawSubmit) { d := int64(-5); r.Item.DeadlineUnix = &d },
	} {
		r := validRaw()
		change(&r)
		propose(what, workitem.CmdSubmit, scope, "key-"+what, r, errs.CodeInvalid)
	}
	propose("no idempotency key", workitem.CmdSubmit, "", "", validRaw(), errs.CodeInvalid)
	propose("another scope", workitem.CmdSubmit, scopeOf(l, "u", "default"), "k", validRaw(), errs.CodeInvalid)
	big := validRaw()
	big.Item.InputRef = strings.Repeat("i", workitem.MaxPayloadBytes)
	propose("a payload over MaxPayloadBytes", workitem.CmdSubmit, scope, "big", big, errs.CodeTooLarge)
	propose("a batch of 129", workitem.CmdSubmitBatch, scope, "b129", struct {
		TenantRef string    `msgpack:"tenant_ref"`
		GraphRef  string    `msgpack:"graph_ref"`
		Items     []rawItem `msgpack:"items"`
	}{"t", "default", make([]rawItem, 129)}, errs.CodeInvalid)
	propose("a claim with ttl 0", workitem.CmdClaim, "", "", struct {
		TenantRef  string   `msgpack:"tenant_ref"`
		GraphRef   string   `msgpack:"graph_ref"`
		OwnerRef   string   `msgpack:"owner_ref"`
		Kinds      []string `msgpack:"kinds"`
		WorkItemID string   `msgpack:"work_item_id"`
		TTLMs      int64    `msgpack:"ttl_ms"`
	}{TenantRef: "t", GraphRef: "default", OwnerRef: "w"}, errs.CodeInvalid)
	propose("an unknown field", workitem.CmdCancel, "", "", map[string]string{"tenant_ref": "t", "work_item_id": "x", "reason": "r", "agent": "me"}, errs.CodeInvalid)
	// And a valid one goes through.
	res, err := l.Propose(bg, log.Command{Type: workitem.CmdSubmit, Version: 1, IdemScope: scope, IdemKey: "fine", Payload: log.MustMarshal(validRaw())})
	if err != nil || res.Err != nil {
		t.Fatalf("a valid raw submit: %v %v", err, res.Err)
	}
}
