package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// contractStatus is the code-to-status map of the HTTP contract, written
// out here independently of errs so that a change to either is caught.
var contractStatus = map[errs.Code]int{
	errs.CodeInvalid:             http.StatusUnprocessableEntity,
	errs.CodeNotFound:            http.StatusNotFound,
	errs.CodeConflict:            http.StatusConflict,
	errs.CodeIdempotencyConflict: http.StatusConflict,
	errs.CodeUnavailable:         http.StatusServiceUnavailable,
	errs.CodeBackpressure:        http.StatusTooManyRequests,
	errs.CodeUnauthorized:        http.StatusUnauthorized,
	errs.CodeForbidden:           http.StatusForbidden,
	errs.CodeInternal:            http.StatusInternalServerError,
	errs.CodeTooLarge:            http.StatusRequestEntityTooLarge,
}

// apiClient bounds every request a test makes, so a hung server fails the
// test instead of hanging it.
var apiClient = &http.Client{Timeout: 15 * time.Second}

type apiReply struct {
	status int
	header http.Header
	body   []byte
}

func apiBase(c *clustertest.Cluster, i int) string { return "http://" + c.Node(i).APIAddr() }

func apiDo(t *testing.T, method, url string, body []byte) apiReply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return apiReply{status: resp.StatusCode, header: resp.Header, body: raw}
}

func apiGet(t *testing.T, url string) apiReply { t.Helper(); return apiDo(t, http.MethodGet, url, nil) }

func apiPost(t *testing.T, url string, v any) apiReply {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return apiDo(t, http.MethodPost, url, b)
}

// ok requires a 200 JSON reply and decodes it into v (if not nil).
func (r apiReply) ok(t *testing.T, what string, v any) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d, want 200: %s", what, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q, want application/json", what, ct)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("%s: undecodable body %s: %v", what, r.body, err)
		}
	}
}

// errorCode checks that r is a well-formed error reply: exactly
// {"error":{"code","message"}} (detail and outcome_unknown may be added),
// a code of the closed set, the status the contract maps it to, and
// Retry-After on 503 and 429. It returns the code.
func (r apiReply) errorCode(t *testing.T, what string) errs.Code {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: error reply Content-Type %q, want application/json", what, ct)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &top); err != nil {
		t.Fatalf("%s: status %d with a non-JSON body %q: %v", what, r.status, r.body, err)
	}
	if len(top) != 1 || top["error"] == nil {
		t.Fatalf("%s: error body %s, want exactly one key \"error\"", what, r.body)
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(top["error"], &inner); err != nil {
		t.Fatalf("%s: error is not an object: %s", what, r.body)
	}
	for k := range inner {
		switch k {
		case "code", "message", "detail", "outcome_unknown":
		default:
			t.Errorf("%s: unexpected key %q in error %s", what, k, r.body)
		}
	}
	var e struct {
		Code    errs.Code `json:"code"`
		Message string    `json:"message"`
	}
	if err := json.Unmarshal(top["error"], &e); err != nil {
		t.Fatalf("%s: error fields: %v in %s", what, err, r.body)
	}
	if e.Message == "" {
		t.Errorf("%s: error without a message: %s", what, r.body)
	}
	want, known := contractStatus[e.Code]
	if !known {
		want, known = errs.Status(e.Code), errs.Known(e.Code)
	}
	if !known {
		t.Fatalf("%s: code %q is not in the closed set: %s", what, e.Code, r.body)
	}
	if r.status != want {
		t.Errorf("%s: code %s with status %d, want %d", what, e.Code, r.status, want)
	}
	if r.status == http.StatusServiceUnavailable || r.status == http.StatusTooManyRequests {
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 0 {
			t.Errorf("%s: status %d with Retry-After %q, want a number of seconds", what, r.status, r.header.Get("Retry-After"))
		}
	}
	return e.Code
}

// wantError requires an error reply with the given status and code. It
// reports a mismatch without stopping the test, so that callers can still
// check what the request changed.
func (r apiReply) wantError(t *testing.T, what string, status int, code errs.Code) {
	t.Helper()
	if r.status/100 == 2 {
		t.Errorf("%s: status %d, want %d %s: %s", what, r.status, status, code, r.body)
		return
	}
	got := r.errorCode(t, what)
	if r.status != status || got != code {
		t.Errorf("%s: %d %s, want %d %s: %s", what, r.status, got, status, code, r.body)
	}
}

func jsonKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %s", raw)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func wantKeys(t *testing.T, what string, raw json.RawMessage, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := jsonKeys(t, raw); !slices.Equal(got, want) {
		t.Errorf("%s: JSON keys %v, want %v in %s", what, got, want, raw)
	}
}

type feedPage struct {
	Events []struct {
		Seq  uint64 `json:"seq"`
		Kind string `json:"kind"`
		Key  string `json:"key"`
	} `json:"events"`
	Next    uint64 `json:"next"`
	LastSeq uint64 `json:"last_seq"`
}

func feedLastSeq(t *testing.T, base string) uint64 {
	t.Helper()
	var p feedPage
	apiGet(t, base+"/v1/changes?limit=1").ok(t, "changes", &p)
	return p.LastSeq
}

// nodeEventsAfter lists the node_create and node_cas events after seq.
func nodeEventsAfter(t *testing.T, base string, seq uint64) []string {
	t.Helper()
	var out []string
	for {
		var p feedPage
		apiGet(t, fmt.Sprintf("%s/v1/changes?after=%d", base, seq)).ok(t, "changes", &p)
		if len(p.Events) == 0 {
			return out
		}
		for _, e := range p.Events {
			if e.Kind == "node_create" || e.Kind == "node_cas" {
				out = append(out, e.Kind+" "+strconv.Quote(e.Key))
			}
		}
		seq = p.Next
	}
}

type apiNode struct {
	NodeID        string                     `json:"node_id"`
	Labels        []string                   `json:"labels"`
	Properties    map[string]json.RawMessage `json:"properties"`
	Version       uint64                     `json:"version"`
	CreatedIndex  uint64                     `json:"created_index"`
	ModifiedIndex uint64                     `json:"modified_index"`
}

type createReply struct {
	Created  bool    `json:"created"`
	Node     apiNode `json:"node"`
	Replayed bool    `json:"replayed"`
}

type casReply struct {
	Swapped  bool    `json:"swapped"`
	Node     apiNode `json:"node"`
	Replayed bool    `json:"replayed"`
}

type pageReply struct {
	Nodes      []apiNode `json:"nodes"`
	NextCursor string    `json:"next_cursor"`
}

func getURL(base, id string, extra ...string) string {
	u := base + "/v1/nodes/get?node_id=" + url.QueryEscape(id)
	for _, e := range extra {
		u += "&" + e
	}
	return u
}

func mustCreate(t *testing.T, base string, req map[string]any) createReply {
	t.Helper()
	var res createReply
	apiPost(t, base+"/v1/nodes/create", req).ok(t, fmt.Sprintf("create %v", req["node_id"]), &res)
	return res
}

// The contract's code-to-status map is the one errs applies.
func TestErrorCodeStatusMap(t *testing.T) {
	for code, status := range contractStatus {
		if !errs.Known(code) {
			t.Errorf("code %s is not known", code)
		}
		if got := errs.Status(code); got != status {
			t.Errorf("errs.Status(%s) = %d, contract says %d", code, got, status)
		}
	}
	if got := errs.Status("no_such_code"); got != http.StatusInternalServerError {
		t.Errorf("unknown code maps to %d, want 500", got)
	}
}

// Bad input at the HTTP edge gets the contract's status and code, and
// changes nothing: the replicated content is the same before and after
// (clustertest.Unchanged), no node_create or node_cas event appears in the
// change feed, the ids it names stay absent, and the seeded nodes keep
// their version. Every case runs through the leader and through a follower.
func TestHTTPBadInputIsRefusedAndChangesNothing(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: steadyTimings})
	leader := c.Leader()
	leaderBase := apiBase(c, leader)

	mustCreate(t, leaderBase, map[string]any{"node_id": "seed", "labels": []string{"alpha"}, "properties": map[string]any{"n": 1}})
	mustCreate(t, leaderBase, map[string]any{"node_id": "seed-big", "properties": map[string]any{"a": strings.Repeat("a", 40<<10)}})
	for _, id := range []string{"alpha-1", "alpha-2"} {
		mustCreate(t, leaderBase, map[string]any{"node_id": id, "labels": []string{"alpha"}})
	}
	mustCreate(t, leaderBase, map[string]any{"node_id": "beta-1", "labels": []string{"beta"}})
	var first pageReply
	apiGet(t, leaderBase+"/v1/nodes/by-label?label=alpha&limit=1").ok(t, "by-label", &first)
	cursor := first.NextCursor
	if cursor == "" || len(first.Nodes) != 1 {
		t.Fatalf("first page of alpha: %+v, want one node and a cursor", first)
	}
	seedVersions := map[string]uint64{}
	for _, id := range []string{"seed", "seed-big"} {
		var n apiNode
		apiGet(t, getURL(leaderBase, id)).ok(t, "get "+id, &n)
		seedVersions[id] = n.Version
	}

	labels65 := make([]string, 65)
	for i := range labels65 {
		labels65[i] = fmt.Sprintf("l%d", i)
	}
	create := func(fields map[string]any) []byte {
		if _, ok := fields["labels"]; !ok {
			fields["labels"] = []string{"probe"}
		}
		b, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// bodyOfSize is a well-formed create of node "bad-size" whose encoding
	// is exactly n bytes (its one property is padded).
	bodyOfSize := func(n int) []byte {
		head, tail := `{"node_id":"bad-size","labels":["probe"],"properties":{"p":"`, `"}}`
		return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
	}
	if got := len(bodyOfSize(domain.MaxBodyBytes + 1)); got != domain.MaxBodyBytes+1 {
		t.Fatalf("bodyOfSize built %d bytes", got)
	}
	q := url.QueryEscape

	const (
		post = http.MethodPost
		get  = http.MethodGet
	)
	cases := []struct {
		name   string
		method string
		path   string
		body   []byte
		status int
		code   errs.Code
		absent []string // node ids that must not exist afterwards
	}{
		// Body shape.
		{"malformed JSON", post, "/v1/nodes/create", []byte(`{"node_id":"bad-json",`), 422, errs.CodeInvalid, []string{"bad-json"}},
		{"not an object", post, "/v1/nodes/create", []byte(`["bad-array"]`), 422, errs.CodeInvalid, nil},
		{"empty body", post, "/v1/nodes/create", []byte(``), 422, errs.CodeInvalid, nil},
		{"wrong field type", post, "/v1/nodes/create", []byte(`{"node_id":7}`), 422, errs.CodeInvalid, []string{"7"}},
		{"trailing garbage", post, "/v1/nodes/create", []byte(`{"node_id":"bad-trail-1","labels":["probe"]} xyz`), 422, errs.CodeInvalid, []string{"bad-trail-1"}},
		{"trailing second object", post, "/v1/nodes/create", []byte(`{"node_id":"bad-trail-2","labels":["probe"]}{"node_id":"bad-trail-3"}`), 422, errs.CodeInvalid, []string{"bad-trail-2", "bad-trail-3"}},
		{"trailing close brace", post, "/v1/nodes/create", []byte(`{"node_id":"bad-trail-4","labels":["probe"]}}`), 422, errs.CodeInvalid, []string{"bad-trail-4"}},
		{"trailing close bracket", post, "/v1/nodes/create", []byte(`{"node_id":"bad-trail-5","labels":["probe"]}]`), 422, errs.CodeInvalid, []string{"bad-trail-5"}},
		{"unknown field in create", post, "/v1/nodes/create", []byte(`{"node_id":"bad-unknown","labels":["probe"],"colour":"red"}`), 422, errs.CodeInvalid, []string{"bad-unknown"}},
		{"duplicate key", post, "/v1/nodes/create", []byte(`{"node_id":"bad-dup-1","node_id":"bad-dup-2","labels":["probe"]}`), 422, errs.CodeInvalid, []string{"bad-dup-1", "bad-dup-2"}},
		{"duplicate key spelled with an escape", post, "/v1/nodes/create", []byte(`{"node_id":"bad-dup-3","labels":["probe"],"label\u0073":["x"]}`), 422, errs.CodeInvalid, []string{"bad-dup-3"}},
		{"duplicate property key", post, "/v1/nodes/create", []byte(`{"node_id":"bad-dup-4","labels":["probe"],"properties":{"a":{"b":1,"b":2}}}`), 422, errs.CodeInvalid, []string{"bad-dup-4"}},
		{"duplicate update key in cas", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","updates":{"n":2,"n":3}}`), 422, errs.CodeInvalid, nil},
		{"duplicate condition key in cas", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","conditions":{"n":1,"n":2},"updates":{"m":2}}`), 422, errs.CodeInvalid, nil},
		{"unknown field in cas", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","updates":{"n":2},"colour":"red"}`), 422, errs.CodeInvalid, nil},
		{"body over 1 MiB", post, "/v1/nodes/create", bodyOfSize(domain.MaxBodyBytes + 1), 413, errs.CodeTooLarge, []string{"bad-size"}},
		{"body of exactly 1 MiB is read (its properties are too large)", post, "/v1/nodes/create", bodyOfSize(domain.MaxBodyBytes), 422, errs.CodeInvalid, []string{"bad-size"}},
		{"cas body over 1 MiB", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","updates":{"p":"` + strings.Repeat("x", domain.MaxBodyBytes) + `"}}`), 413, errs.CodeTooLarge, nil},

		// node_id bounds.
		{"empty node_id", post, "/v1/nodes/create", create(map[string]any{"node_id": ""}), 422, errs.CodeInvalid, nil},
		{"missing node_id", post, "/v1/nodes/create", create(map[string]any{}), 422, errs.CodeInvalid, nil},
		{"node_id of 513 bytes", post, "/v1/nodes/create", create(map[string]any{"node_id": strings.Repeat("n", 513)}), 422, errs.CodeInvalid, nil},
		{"node_id of 513 bytes in multibyte runes", post, "/v1/nodes/create", create(map[string]any{"node_id": strings.Repeat("é", 256) + "n"}), 422, errs.CodeInvalid, nil},
		{"node_id with U+0001", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad\u0001id"}), 422, errs.CodeInvalid, nil},
		{"node_id with newline", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad\nid"}), 422, errs.CodeInvalid, nil},
		{"node_id with DEL", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad\u007fid"}), 422, errs.CodeInvalid, nil},
		{"node_id with a C1 control", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad\u0085id"}), 422, errs.CodeInvalid, nil},
		{"node_id with invalid UTF-8", post, "/v1/nodes/create", []byte("{\"node_id\":\"bad-utf8-\xff\",\"labels\":[\"probe\"]}"), 422, errs.CodeInvalid, []string{"bad-utf8-\ufffd", "bad-utf8-"}},
		{"node_id with a lone surrogate escape", post, "/v1/nodes/create", []byte(`{"node_id":"bad-surrogate-\ud800","labels":["probe"]}`), 422, errs.CodeInvalid, []string{"bad-surrogate-\ufffd", "bad-surrogate-"}},

		// Labels.
		{"65 labels", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad-labels-65", "labels": labels65}), 422, errs.CodeInvalid, []string{"bad-labels-65"}},
		{"duplicate labels", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad-labels-dup", "labels": []string{"probe", "x", "probe"}}), 422, errs.CodeInvalid, []string{"bad-labels-dup"}},
		{"empty label", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad-labels-empty", "labels": []string{"probe", ""}}), 422, errs.CodeInvalid, []string{"bad-labels-empty"}},
		{"label with invalid UTF-8", post, "/v1/nodes/create", []byte("{\"node_id\":\"bad-labels-utf8\",\"labels\":[\"probe\",\"l-\xff\"]}"), 422, errs.CodeInvalid, []string{"bad-labels-utf8"}},
		{"label with a control character", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad-labels-ctl", "labels": []string{"probe", "a\tb"}}), 422, errs.CodeInvalid, []string{"bad-labels-ctl"}},

		// Properties.
		{"properties over 64 KiB", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad-props-big", "properties": map[string]any{"p": strings.Repeat("x", 64<<10)}}), 422, errs.CodeInvalid, []string{"bad-props-big"}},
		{"empty property name", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad-props-key", "properties": map[string]any{"": 1}}), 422, errs.CodeInvalid, []string{"bad-props-key"}},
		{"property nested too deep", post, "/v1/nodes/create", []byte(`{"node_id":"bad-props-deep","labels":["probe"],"properties":{"p":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}`), 422, errs.CodeInvalid, []string{"bad-props-deep"}},
		{"idempotency_key with a control character", post, "/v1/nodes/create", create(map[string]any{"node_id": "bad-idem", "idempotency_key": "k\u0002"}), 422, errs.CodeInvalid, []string{"bad-idem"}},

		// CAS.
		{"cas with empty updates", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","conditions":{"n":1},"updates":{}}`), 422, errs.CodeInvalid, nil},
		{"cas without updates", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","conditions":{"n":1}}`), 422, errs.CodeInvalid, nil},
		{"cas with empty node_id", post, "/v1/nodes/cas", []byte(`{"node_id":"","updates":{"n":2}}`), 422, errs.CodeInvalid, nil},
		{"cas with a bad condition name", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","conditions":{"":1},"updates":{"n":2}}`), 422, errs.CodeInvalid, nil},
		{"cas with updates over 64 KiB", post, "/v1/nodes/cas", []byte(`{"node_id":"seed","updates":{"p":"` + strings.Repeat("x", 64<<10) + `"}}`), 422, errs.CodeInvalid, nil},
		{"cas growing properties past 64 KiB", post, "/v1/nodes/cas", []byte(`{"node_id":"seed-big","updates":{"b":"` + strings.Repeat("b", 40<<10) + `"}}`), 422, errs.CodeInvalid, nil},
		{"cas on a missing node", post, "/v1/nodes/cas", []byte(`{"node_id":"bad-missing","updates":{"n":2}}`), 404, errs.CodeNotFound, []string{"bad-missing"}},

		// Get.
		{"get of a missing node", get, "/v1/nodes/get?node_id=bad-missing", nil, 404, errs.CodeNotFound, nil},
		{"get without node_id", get, "/v1/nodes/get", nil, 422, errs.CodeInvalid, nil},
		{"get with a control character", get, "/v1/nodes/get?node_id=a%01b", nil, 422, errs.CodeInvalid, nil},
		{"get with invalid UTF-8", get, "/v1/nodes/get?node_id=a%FFb", nil, 422, errs.CodeInvalid, nil},
		{"get with node_id of 513 bytes", get, "/v1/nodes/get?node_id=" + strings.Repeat("n", 513), nil, 422, errs.CodeInvalid, nil},
		{"get with an unknown parameter", get, "/v1/nodes/get?node_id=seed&colour=red", nil, 422, errs.CodeInvalid, nil},
		{"get with node_id twice", get, "/v1/nodes/get?node_id=seed&node_id=alpha-1", nil, 422, errs.CodeInvalid, nil},
		{"get with consistency=bogus", get, "/v1/nodes/get?node_id=seed&consistency=bogus", nil, 422, errs.CodeInvalid, nil},

		// By label.
		{"cursor never issued", get, "/v1/nodes/by-label?label=alpha&after=garbage", nil, 422, errs.CodeInvalid, nil},
		{"cursor with the right prefix, never issued", get, "/v1/nodes/by-label?label=alpha&after=n1.AAAAAAAAAAAAAAAA", nil, 422, errs.CodeInvalid, nil},
		{"truncated cursor", get, "/v1/nodes/by-label?label=alpha&after=" + q(cursor[:len(cursor)-1]), nil, 422, errs.CodeInvalid, nil},
		{"cursor cut to its check", get, "/v1/nodes/by-label?label=alpha&after=" + q(cursor[:len("n1.")+11]), nil, 422, errs.CodeInvalid, nil},
		{"cursor with an extra character", get, "/v1/nodes/by-label?label=alpha&after=" + q(cursor+"A"), nil, 422, errs.CodeInvalid, nil},
		{"cursor of another label", get, "/v1/nodes/by-label?label=beta&after=" + q(cursor), nil, 422, errs.CodeInvalid, nil},
		{"limit 0", get, "/v1/nodes/by-label?label=alpha&limit=0", nil, 422, errs.CodeInvalid, nil},
		{"limit 129", get, "/v1/nodes/by-label?label=alpha&limit=129", nil, 422, errs.CodeInvalid, nil},
		{"limit -1", get, "/v1/nodes/by-label?label=alpha&limit=-1", nil, 422, errs.CodeInvalid, nil},
		{"limit x", get, "/v1/nodes/by-label?label=alpha&limit=x", nil, 422, errs.CodeInvalid, nil},
		{"limit 1.5", get, "/v1/nodes/by-label?label=alpha&limit=1.5", nil, 422, errs.CodeInvalid, nil},
		{"by-label with an unknown parameter", get, "/v1/nodes/by-label?label=alpha&offset=3", nil, 422, errs.CodeInvalid, nil},
		{"by-label with consistency=bogus", get, "/v1/nodes/by-label?label=alpha&consistency=bogus", nil, 422, errs.CodeInvalid, nil},
		{"by-label without a label", get, "/v1/nodes/by-label", nil, 422, errs.CodeInvalid, nil},
		{"by-label with a control character in the label", get, "/v1/nodes/by-label?label=a%0Ab", nil, 422, errs.CodeInvalid, nil},

		// Change feed.
		{"changes with after=x", get, "/v1/changes?after=x", nil, 422, errs.CodeInvalid, nil},
		{"changes with after=-1", get, "/v1/changes?after=-1", nil, 422, errs.CodeInvalid, nil},
		{"changes ahead of the feed", get, "/v1/changes?after=999999999", nil, 422, errs.CodeInvalid, nil},
		{"changes with limit 0", get, "/v1/changes?limit=0", nil, 422, errs.CodeInvalid, nil},
		{"changes with limit 1025", get, "/v1/changes?limit=1025", nil, 422, errs.CodeInvalid, nil},
		{"changes with wait_ms -1", get, "/v1/changes?wait_ms=-1", nil, 422, errs.CodeInvalid, nil},
		{"changes with wait_ms over 30 s", get, "/v1/changes?wait_ms=30001", nil, 422, errs.CodeInvalid, nil},
		{"changes with an unknown parameter", get, "/v1/changes?since=3", nil, 422, errs.CodeInvalid, nil},
		{"changes with consistency=bogus", get, "/v1/changes?consistency=bogus", nil, 422, errs.CodeInvalid, nil},

		// Membership.
		{"join with an empty id", post, "/v1/cluster/join", []byte(`{"id":"","raft_addr":"127.0.0.1:1","api_addr":"127.0.0.1:2"}`), 422, errs.CodeInvalid, nil},
		{"join with an unknown field", post, "/v1/cluster/join", []byte(`{"id":"nx","raft_addr":"127.0.0.1:1","api_addr":"127.0.0.1:2","voter":false}`), 422, errs.CodeInvalid, nil},
		{"join with malformed JSON", post, "/v1/cluster/join", []byte(`{"id":`), 422, errs.CodeInvalid, nil},
		{"remove with an empty id", post, "/v1/cluster/remove", []byte(`{"id":""}`), 422, errs.CodeInvalid, nil},

		// Routes.
		{"unknown route", get, "/v1/nope", nil, 404, errs.CodeNotFound, nil},
		{"unknown route under a known prefix", get, "/v1/nodes/list", nil, 404, errs.CodeNotFound, nil},
		{"known route, wrong method", get, "/v1/nodes/create", nil, 405, errs.CodeMethodNotAllowed, nil},
		{"known route, wrong method with a body", http.MethodPut, "/v1/nodes/create", []byte(`{"node_id":"bad-put","labels":["probe"]}`), 405, errs.CodeMethodNotAllowed, []string{"bad-put"}},
		{"read route, POST", post, "/v1/nodes/get?node_id=seed", []byte(`{}`), 405, errs.CodeMethodNotAllowed, nil},
	}

	for _, via := range []struct {
		name string
		i    int
	}{{"via leader", leader}, {"via follower", (leader + 1) % c.Size()}} {
		base := apiBase(c, via.i)
		for _, tc := range cases {
			t.Run(via.name+"/"+tc.name, func(t *testing.T) {
				before := feedLastSeq(t, leaderBase)
				c.Unchanged(t, tc.name, func() {
					apiDo(t, tc.method, base+tc.path, tc.body).wantError(t, tc.name, tc.status, tc.code)
				})
				if evs := nodeEventsAfter(t, leaderBase, before); len(evs) > 0 {
					t.Errorf("refused request changed state: %v", evs)
				}
				for _, id := range tc.absent {
					apiGet(t, getURL(leaderBase, id)).wantError(t, "get "+strconv.Quote(id)+" after the refused request", 404, errs.CodeNotFound)
				}
			})
		}
	}

	var probe pageReply
	apiGet(t, leaderBase+"/v1/nodes/by-label?label=probe").ok(t, "by-label probe", &probe)
	if len(probe.Nodes) != 0 {
		t.Errorf("refused creates left nodes labelled probe: %+v", probe.Nodes)
	}
	for id, v := range seedVersions {
		var n apiNode
		apiGet(t, getURL(leaderBase, id)).ok(t, "get "+id, &n)
		if n.Version != v {
			t.Errorf("%s: version %d after refused requests, want %d", id, n.Version, v)
		}
	}
}

// Every route works through a follower, which forwards writes and
// linearizable reads to the leader, and the JSON shapes are the contract's.
func TestHTTPRoutesThroughLeaderAndFollower(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: steadyTimings})
	leader := c.Leader()
	f1, f2 := (leader+1)%c.Size(), (leader+2)%c.Size()
	lb, b1, b2 := apiBase(c, leader), apiBase(c, f1), apiBase(c, f2)

	// Create through a follower; the raw JSON has exactly the contract's keys.
	r := apiPost(t, b1+"/v1/nodes/create", map[string]any{
		"node_id": "n-1", "labels": []string{"team", "blue"}, "properties": map[string]any{"n": 1, "gone": nil, "s": "x"},
	})
	var created createReply
	r.ok(t, "create via follower", &created)
	wantKeys(t, "create reply", r.body, "created", "node")
	var raw struct{ Node json.RawMessage }
	_ = json.Unmarshal(r.body, &raw)
	wantKeys(t, "node", raw.Node, "node_id", "labels", "properties", "version", "created_index", "modified_index")
	if !created.Created || created.Replayed || created.Node.NodeID != "n-1" || created.Node.Version != 1 ||
		created.Node.CreatedIndex == 0 || created.Node.ModifiedIndex != created.Node.CreatedIndex {
		t.Fatalf("create via follower: %+v", created)
	}
	if !slices.Equal(created.Node.Labels, []string{"blue", "team"}) {
		t.Errorf("labels %v, want sorted [blue team]", created.Node.Labels)
	}
	if p := created.Node.Properties; len(p) != 2 || string(p["n"]) != "1" || string(p["s"]) != `"x"` {
		t.Errorf("properties %v, want n=1 and s=\"x\" (a null property is absent)", p)
	}

	// A node with no labels or properties still has an array and an object.
	r = apiPost(t, b2+"/v1/nodes/create", map[string]any{"node_id": "bare"})
	r.ok(t, "create bare", nil)
	var bare struct {
		Node struct {
			Labels     json.RawMessage `json:"labels"`
			Properties json.RawMessage `json:"properties"`
		} `json:"node"`
	}
	_ = json.Unmarshal(r.body, &bare)
	if string(bare.Node.Labels) != "[]" || string(bare.Node.Properties) != "{}" {
		t.Errorf("bare node: labels %s, properties %s; want [] and {}", bare.Node.Labels, bare.Node.Properties)
	}

	// node_id at exactly 512 bytes (in multibyte runes) and 64 labels are accepted.
	long := strings.Repeat("é", 256)
	labels64 := make([]string, 64)
	for i := range labels64 {
		labels64[i] = fmt.Sprintf("l%02d", i)
	}
	if res := mustCreate(t, b1, map[string]any{"node_id": long, "labels": labels64}); !res.Created || res.Node.NodeID != long || len(res.Node.Labels) != 64 {
		t.Errorf("512-byte node_id with 64 labels: created=%v id=%d bytes labels=%d", res.Created, len(res.Node.NodeID), len(res.Node.Labels))
	}

	// A second create of the same id reads the first writer's node.
	if again := mustCreate(t, b2, map[string]any{"node_id": "n-1", "properties": map[string]any{"n": 99}}); again.Created || !reflect.DeepEqual(again.Node, created.Node) {
		t.Errorf("second create: %+v, want created=false and the first node %+v", again, created.Node)
	}

	// Linearizable get on the other follower, stale get eventually everywhere.
	var got apiNode
	r = apiGet(t, getURL(b2, "n-1"))
	r.ok(t, "get via follower", &got)
	wantKeys(t, "get reply", r.body, "node_id", "labels", "properties", "version", "created_index", "modified_index")
	if !reflect.DeepEqual(got, created.Node) {
		t.Errorf("get via follower: %+v, want %+v", got, created.Node)
	}
	for _, base := range []string{lb, b1, b2} {
		if !c.Eventually(5*time.Second, func() bool { return apiGet(t, getURL(base, "n-1", "consistency=stale")).status == 200 }) {
			t.Errorf("%s: stale get never saw n-1", base)
		}
	}
	apiGet(t, getURL(b1, "n-1", "consistency=linearizable")).ok(t, "explicit linearizable get", nil)

	// CAS through a follower.
	casCases := []struct {
		name        string
		conditions  map[string]any
		updates     map[string]any
		wantSwapped bool
		wantVersion uint64
		wantProps   map[string]string
	}{
		{"condition holds", map[string]any{"n": 1}, map[string]any{"n": 2}, true, 2, map[string]string{"n": "2", "s": `"x"`}},
		{"stale condition", map[string]any{"n": 1}, map[string]any{"n": 3}, false, 2, map[string]string{"n": "2", "s": `"x"`}},
		{"null condition on an absent field", map[string]any{"gone": nil}, map[string]any{"owner": "a"}, true, 3, map[string]string{"n": "2", "s": `"x"`, "owner": `"a"`}},
		{"null condition on a present field", map[string]any{"owner": nil}, map[string]any{"owner": "b"}, false, 3, map[string]string{"n": "2", "s": `"x"`, "owner": `"a"`}},
		{"null update removes the field", map[string]any{"owner": "a"}, map[string]any{"owner": nil, "s": "y"}, true, 4, map[string]string{"n": "2", "s": `"y"`}},
		{"no conditions", nil, map[string]any{"n": 5}, true, 5, map[string]string{"n": "5", "s": `"y"`}},
		{"condition on a number of another spelling", map[string]any{"n": json.Number("5.0")}, map[string]any{"n": 6}, true, 6, map[string]string{"n": "6", "s": `"y"`}},
	}
	for _, tc := range casCases {
		r := apiPost(t, b1+"/v1/nodes/cas", map[string]any{"node_id": "n-1", "conditions": tc.conditions, "updates": tc.updates})
		var res casReply
		r.ok(t, "cas "+tc.name, &res)
		if tc.wantSwapped {
			wantKeys(t, "cas reply", r.body, "swapped", "node")
		} else {
			// A CAS that did not swap says which conditions failed.
			wantKeys(t, "cas reply", r.body, "swapped", "node", "failed")
			if !strings.Contains(string(r.body), `"failed":[{"field":"`) {
				t.Errorf("cas %s: %s names no failed condition", tc.name, r.body)
			}
		}
		props := map[string]string{}
		for k, v := range res.Node.Properties {
			props[k] = string(v)
		}
		if res.Swapped != tc.wantSwapped || res.Node.Version != tc.wantVersion || !reflect.DeepEqual(props, tc.wantProps) {
			t.Errorf("cas %s: swapped=%v version=%d props=%v; want %v %d %v", tc.name, res.Swapped, res.Node.Version, props, tc.wantSwapped, tc.wantVersion, tc.wantProps)
		}
		if res.Node.CreatedIndex != created.Node.CreatedIndex {
			t.Errorf("cas %s: created_index changed to %d", tc.name, res.Node.CreatedIndex)
		}
	}

	// by-label pages in id order through a follower, with a real cursor.
	for i := 5; i >= 1; i-- {
		mustCreate(t, b2, map[string]any{"node_id": fmt.Sprintf("t-%d", i), "labels": []string{"paged"}})
	}
	var ids []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("by-label did not end: %v", ids)
		}
		u := b1 + "/v1/nodes/by-label?label=paged&limit=2"
		if after != "" {
			u += "&after=" + url.QueryEscape(after)
		}
		r := apiGet(t, u)
		var p pageReply
		r.ok(t, "by-label", &p)
		wantKeys(t, "page", r.body, "nodes", "next_cursor")
		if len(p.Nodes) > 2 {
			t.Fatalf("page of %d nodes over limit 2", len(p.Nodes))
		}
		for _, n := range p.Nodes {
			ids = append(ids, n.NodeID)
		}
		if p.NextCursor == "" {
			break
		}
		after = p.NextCursor
	}
	if want := []string{"t-1", "t-2", "t-3", "t-4", "t-5"}; !slices.Equal(ids, want) {
		t.Errorf("by-label pages gave %v, want %v", ids, want)
	}
	var stalePage pageReply
	if !c.Eventually(5*time.Second, func() bool {
		apiGet(t, b2+"/v1/nodes/by-label?label=paged&consistency=stale&limit=128").ok(t, "stale by-label", &stalePage)
		return len(stalePage.Nodes) == 5
	}) {
		t.Errorf("stale by-label on a follower: %d nodes, want 5", len(stalePage.Nodes))
	}
	var empty pageReply
	apiGet(t, b1+"/v1/nodes/by-label?label=nobody").ok(t, "by-label of an unused label", &empty)
	if empty.Nodes == nil || len(empty.Nodes) != 0 || empty.NextCursor != "" {
		t.Errorf("unused label: %+v, want an empty array and no cursor", empty)
	}

	// Status through a follower.
	r = apiGet(t, b1+"/v1/cluster/status")
	var st cluster.Status
	r.ok(t, "status", &st)
	wantKeys(t, "status", r.body, "node_id", "cluster_id", "auth_mode", "state", "leader_id", "leader_api_addr", "term", "commit_index", "applied_index", "members", "gated", "enabled", "effects", "log_store", "storage")
	var rawStatus struct{ Members []json.RawMessage }
	_ = json.Unmarshal(r.body, &rawStatus)
	for _, m := range rawStatus.Members {
		wantKeys(t, "member", m, "id", "raft_addr", "api_addr", "voter", "serves")
	}
	if st.NodeID != c.Node(f1).ID() || st.State != "Follower" || st.Term == 0 || st.CommitIndex == 0 || st.AppliedIndex == 0 || len(st.Members) != 3 ||
		!st.Gated || !st.Enabled.Equal(domain.Served(builtin.Domains())) || !st.Members[0].Serves.Equal(st.Enabled) {
		t.Errorf("status via follower: %+v", st)
	}
	if st.LeaderID != c.Node(leader).ID() || st.LeaderAPIAddr != c.Node(leader).APIAddr() {
		// Leadership may have moved under load; the status must still agree with the node's view.
		if cur := c.Leader(); cur < 0 || st.LeaderID != c.Node(cur).ID() || st.LeaderAPIAddr != c.Node(cur).APIAddr() {
			t.Errorf("status leader %s at %s, want %s at %s", st.LeaderID, st.LeaderAPIAddr, c.Node(leader).ID(), c.Node(leader).APIAddr())
		}
	}
	// Member metadata is registered asynchronously after start; every
	// member's API address must appear soon.
	if !c.Eventually(5*time.Second, func() bool {
		apiGet(t, b1+"/v1/cluster/status").ok(t, "status", &st)
		for _, m := range st.Members {
			if !m.Voter || m.APIAddr == "" || m.RaftAddr == "" {
				return false
			}
		}
		return len(st.Members) == 3
	}) {
		t.Errorf("status members %+v: want 3 voters with raft and API addresses", st.Members)
	}
	for _, m := range st.Members {
		for i := range c.Size() {
			if n := c.Node(i); n.ID() == m.ID && (n.APIAddr() != m.APIAddr || n.RaftAddr() != m.RaftAddr) {
				t.Errorf("member %+v: node has API %s, raft %s", m, n.APIAddr(), n.RaftAddr())
			}
		}
	}

	// State hashes: every replica reports one; equal indexes have equal hashes.
	if !c.Eventually(10*time.Second, func() bool {
		var hashes []cluster.StateHash
		for _, base := range []string{lb, b1, b2} {
			r := apiGet(t, base+"/v1/cluster/state-hash")
			var h cluster.StateHash
			r.ok(t, "state-hash", &h)
			wantKeys(t, "state-hash", r.body, "index", "hash", "content_hash", "data_hash", "tables")
			if len(h.Hash) != 64 || h.Index == 0 {
				t.Fatalf("state-hash %+v: want an index and 64 hex digits", h)
			}
			var tables struct {
				Tables map[string]string `json:"tables"`
			}
			if err := json.Unmarshal(r.body, &tables); err != nil || len(tables.Tables["meta"]) != 64 || len(tables.Tables["members"]) != 64 {
				t.Fatalf("state-hash tables %s: want a 64-digit hash of meta and of members (%v)", r.body, err)
			}
			hashes = append(hashes, h)
		}
		if hashes[0].Index != hashes[1].Index || hashes[0].Index != hashes[2].Index {
			return false // ticks move the index; catch the replicas between two entries
		}
		if hashes[0].Hash != hashes[1].Hash || hashes[0].Hash != hashes[2].Hash {
			t.Fatalf("replicas at index %d disagree: %+v", hashes[0].Index, hashes)
		}
		return true
	}) {
		t.Error("state-hash: the replicas never reported the same index")
	}
	// With ?index=N: the state as of exactly N, on every replica; an index
	// long passed is a 409, a malformed one a 422.
	var h0 cluster.StateHash
	apiGet(t, lb+"/v1/cluster/state-hash").ok(t, "state-hash", &h0)
	target := strconv.FormatUint(h0.Index+3, 10)
	var at []cluster.StateHash
	for _, base := range []string{lb, b1, b2} {
		var h cluster.StateHash
		apiGet(t, base+"/v1/cluster/state-hash?index="+target).ok(t, "state-hash at "+target, &h)
		if strconv.FormatUint(h.Index, 10) != target || len(h.Hash) != 64 {
			t.Errorf("state-hash at %s from %s: %+v", target, base, h)
		}
		at = append(at, h)
	}
	if at[0] != at[1] || at[0] != at[2] {
		t.Errorf("replicas disagree at index %s: %+v", target, at)
	}
	apiGet(t, lb+"/v1/cluster/state-hash?index=1").wantError(t, "state-hash at a passed index", 409, errs.CodeConflict)
	apiGet(t, lb+"/v1/cluster/state-hash?index=x").wantError(t, "state-hash at a malformed index", 422, errs.CodeInvalid)

	// Health, readiness and metrics.
	for _, base := range []string{lb, b1, b2} {
		var h map[string]string
		apiGet(t, base+"/healthz").ok(t, "healthz", &h)
		if h["status"] != "ok" {
			t.Errorf("healthz: %v", h)
		}
		if !c.Eventually(5*time.Second, func() bool { return apiGet(t, base+"/readyz").status == 200 }) {
			r := apiGet(t, base+"/readyz")
			t.Errorf("%s/readyz: %d %s, want 200 with a leader", base, r.status, r.body)
		}
	}
	m := apiGet(t, b1+"/metrics")
	if m.status != 200 {
		t.Fatalf("metrics: %d", m.status)
	}
	if v, ok := metricValue(string(m.body), "arbiter_commit_index"); !ok || v < 1 {
		t.Errorf("metrics: arbiter_commit_index = %v (present %v), want >= 1", v, ok)
	}
	if v, ok := metricValue(string(m.body), "arbiter_forwarded_proposals_total"); !ok || v < 1 {
		t.Errorf("metrics of a follower that forwarded writes: arbiter_forwarded_proposals_total = %v (present %v), want >= 1", v, ok)
	}
}

// metricValue finds an unlabelled sample in the Prometheus text format.
func metricValue(text, name string) (float64, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// An idempotency key replays the first result of the same request and
// refuses a different request.
func TestHTTPIdempotencyKeys(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	base := apiBase(c, 0)
	create := map[string]any{"node_id": "idem-1", "labels": []string{"x"}, "properties": map[string]any{"v": 1}, "idempotency_key": "k-create"}
	first := mustCreate(t, base, create)
	if !first.Created || first.Replayed {
		t.Fatalf("first keyed create: %+v", first)
	}
	seq := feedLastSeq(t, base)
	r := apiPost(t, base+"/v1/nodes/create", create)
	var again createReply
	r.ok(t, "replayed create", &again)
	wantKeys(t, "replayed create", r.body, "created", "node", "replayed")
	if !again.Created || !again.Replayed || !reflect.DeepEqual(again.Node, first.Node) {
		t.Errorf("replay: %+v, want the first result (created=true) with replayed=true", again)
	}
	other := map[string]any{"node_id": "idem-2", "idempotency_key": "k-create"}
	apiPost(t, base+"/v1/nodes/create", other).wantError(t, "same key, other request", 409, errs.CodeIdempotencyConflict)
	apiGet(t, getURL(base, "idem-2")).wantError(t, "get idem-2", 404, errs.CodeNotFound)

	cas := map[string]any{"node_id": "idem-1", "conditions": map[string]any{"v": 1}, "updates": map[string]any{"v": 2}, "idempotency_key": "k-cas"}
	var swapped, replayed casReply
	apiPost(t, base+"/v1/nodes/cas", cas).ok(t, "keyed cas", &swapped)
	apiPost(t, base+"/v1/nodes/cas", cas).ok(t, "replayed cas", &replayed)
	if !swapped.Swapped || swapped.Node.Version != 2 || swapped.Replayed {
		t.Errorf("keyed cas: %+v", swapped)
	}
	if !replayed.Swapped || !replayed.Replayed || !reflect.DeepEqual(replayed.Node, swapped.Node) {
		t.Errorf("replayed cas: %+v, want the first result with replayed=true", replayed)
	}
	cas["updates"] = map[string]any{"v": 3}
	apiPost(t, base+"/v1/nodes/cas", cas).wantError(t, "same cas key, other updates", 409, errs.CodeIdempotencyConflict)
	var now apiNode
	apiGet(t, getURL(base, "idem-1")).ok(t, "get idem-1", &now)
	if now.Version != 2 || string(now.Properties["v"]) != "2" {
		t.Errorf("after replays and a conflict: %+v, want version 2 with v=2", now)
	}
	if evs := nodeEventsAfter(t, base, seq); len(evs) != 1 || evs[0] != `node_cas "idem-1"` {
		t.Errorf("events after the first create: %v, want exactly one node_cas", evs)
	}
}

// The change feed pages in sequence order and long-polls, boundedly.
func TestHTTPChangeFeedPagingAndLongPoll(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	base := apiBase(c, 0)
	start := feedLastSeq(t, base)
	for i := range 5 {
		mustCreate(t, base, map[string]any{"node_id": fmt.Sprintf("feed-%d", i)})
	}
	var keys []string
	var seqs []uint64
	after := start
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("change feed did not end")
		}
		r := apiGet(t, fmt.Sprintf("%s/v1/changes?after=%d&limit=2", base, after))
		var p feedPage
		r.ok(t, "changes", &p)
		wantKeys(t, "changes page", r.body, "events", "next", "last_seq")
		if len(p.Events) > 2 {
			t.Fatalf("page of %d events over limit 2", len(p.Events))
		}
		if len(p.Events) == 0 {
			if p.Next != after {
				t.Errorf("empty page: next %d, want the cursor %d", p.Next, after)
			}
			break
		}
		for _, e := range p.Events {
			if e.Kind == "node_create" {
				keys = append(keys, e.Key)
			}
			seqs = append(seqs, e.Seq)
		}
		if p.Next != p.Events[len(p.Events)-1].Seq {
			t.Errorf("next %d, want the last seq %d", p.Next, p.Events[len(p.Events)-1].Seq)
		}
		after = p.Next
	}
	if want := []string{"feed-0", "feed-1", "feed-2", "feed-3", "feed-4"}; !slices.Equal(keys, want) {
		t.Errorf("feed keys %v, want %v", keys, want)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Errorf("sequences %v are not consecutive", seqs)
			break
		}
	}

	// Nothing new: wait_ms waits about that long and returns an empty page.
	begin := time.Now()
	var p feedPage
	apiGet(t, fmt.Sprintf("%s/v1/changes?after=%d&wait_ms=300", base, after)).ok(t, "idle long poll", &p)
	if waited := time.Since(begin); len(p.Events) != 0 || waited < 250*time.Millisecond {
		t.Errorf("idle long poll: %d events after %v, want none after about 300ms", len(p.Events), waited)
	}

	// A new event wakes a long poll long before its wait ends.
	type result struct {
		p   feedPage
		err error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := apiClient.Get(fmt.Sprintf("%s/v1/changes?after=%d&wait_ms=20000", base, after))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		var p feedPage
		err = json.NewDecoder(resp.Body).Decode(&p)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		done <- result{p, err}
	}()
	time.Sleep(100 * time.Millisecond) // let the poll start waiting; it is correct either way
	mustCreate(t, base, map[string]any{"node_id": "wake"})
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("long poll: %v", res.err)
		}
		if len(res.p.Events) == 0 || res.p.Events[0].Key != "wake" || res.p.Events[0].Seq != after+1 {
			t.Errorf("long poll woke with %+v, want the event of wake at seq %d", res.p.Events, after+1)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll was not woken by a new event")
	}
}

// Requests beyond MaxConcurrentRequests get 429 backpressure with
// Retry-After, and the slot frees when the request in flight ends.
func TestHTTPBackpressure(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(_ int, cfg *cluster.Config) {
		cfg.MaxConcurrentRequests = 1
	}})
	base := apiBase(c, 0)
	after := feedLastSeq(t, base)
	done := make(chan int, 1)
	go func() {
		resp, err := apiClient.Get(fmt.Sprintf("%s/v1/changes?after=%d&wait_ms=10000", base, after))
		if err != nil {
			done <- -1
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	var busy apiReply
	if !c.Eventually(5*time.Second, func() bool {
		busy = apiGet(t, base+"/healthz")
		return busy.status != 200
	}) {
		t.Fatal("a second request was served while one long poll held the only slot")
	}
	busy.wantError(t, "request over the concurrency bound", 429, errs.CodeBackpressure)
	apiPost(t, base+"/v1/nodes/create", map[string]any{"node_id": "bp"}).wantError(t, "create over the bound", 429, errs.CodeBackpressure)

	// Wake the poll with a write that does not go through HTTP.
	n := c.Node(0)
	if _, err := nodes.On(n).CreateIfAbsent(context.Background(), nodes.CreateRequest{NodeID: "release"}); err != nil {
		t.Fatal(err)
	}
	select {
	case status := <-done:
		if status != 200 {
			t.Fatalf("long poll ended with %d", status)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("long poll did not end")
	}
	if !c.Eventually(5*time.Second, func() bool { return apiGet(t, base+"/healthz").status == 200 }) {
		t.Fatal("the slot was not released")
	}
	apiGet(t, getURL(base, "bp")).wantError(t, "get bp", 404, errs.CodeNotFound)
}

// With no quorum, writes, linearizable reads and /readyz answer 503 with
// Retry-After within the server's bound, and nothing is applied.
func TestHTTPUnavailableCarriesRetryAfter(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(_ int, cfg *cluster.Config) {
		cfg.ApplyTimeout = time.Second
	}})
	leader := c.Leader()
	keep := (leader + 1) % c.Size()
	base := apiBase(c, keep)
	c.Stop(leader)
	c.Stop((leader + 2) % c.Size())

	begin := time.Now()
	apiPost(t, base+"/v1/nodes/create", map[string]any{"node_id": "no-quorum"}).
		wantError(t, "create without quorum", 503, errs.CodeUnavailable)
	apiPost(t, base+"/v1/nodes/cas", map[string]any{"node_id": "no-quorum", "updates": map[string]any{"a": 1}}).
		wantError(t, "cas without quorum", 503, errs.CodeUnavailable)
	apiGet(t, getURL(base, "no-quorum")).wantError(t, "linearizable get without quorum", 503, errs.CodeUnavailable)
	apiGet(t, base+"/v1/nodes/by-label?label=x").wantError(t, "linearizable by-label without quorum", 503, errs.CodeUnavailable)
	if took := time.Since(begin); took > 12*time.Second {
		t.Errorf("four requests without quorum took %v; each should end near ApplyTimeout (1s)", took)
	}
	var last apiReply
	if !c.Eventually(5*time.Second, func() bool {
		last = apiGet(t, base+"/readyz")
		return last.status != 200
	}) {
		t.Fatalf("readyz stayed 200 without a leader: %s", last.body)
	}
	last.wantError(t, "readyz without a leader", 503, errs.CodeUnavailable)
	apiGet(t, base+"/healthz").ok(t, "healthz without a leader", nil)
	apiGet(t, getURL(base, "no-quorum", "consistency=stale")).wantError(t, "stale get of the refused create", 404, errs.CodeNotFound)
}
