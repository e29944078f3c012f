package workitem_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
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
	{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}},
	{ID: "ctl", Tenants: []string{"t"}, Roles: []string{identity.RoleController}},
	{ID: "p1", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}},
	{ID: "p2", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}},
	{ID: "rd", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}},
	{ID: "ou", Tenants: []string{"u"}, Roles: []string{identity.RoleMember}},
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
	t           *testing.T
	c           *clustertest.Cluster
	base        string // a follower: every write is forwarded
	leader      string
	leaderIndex int
	requests    int
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
		// 4 MiB entries take over a second to forward, replicate and
		// apply under -race; the harness's failover-tuned timeouts
		// (400 ms) would depose the leader meanwhile. No fault here.
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 3*time.Second, 3*time.Second, 1500*time.Millisecond
	}})
	leader := c.WaitLeader(10 * time.Second)
	return &httpFixture{t: t, c: c, base: c.URL((leader + 1) % c.Size()), leader: c.URL(leader), leaderIndex: leader}
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
// detail.field, if set) and proves that nothing changed by the state
// hash at an index: a refusal the service decides itself never reaches
// the log (the index and the state hash after are those before); one the
// FSM decides is the next entry, and the content hash as of exactly its
// index is the content hash before.
func (f *httpFixture) refused(what string, status int, code errs.Code, field string, logged bool, call func() reply) envelope {
	f.t.Helper()
	before := f.hash()
	r := call()
	var after cluster.StateHash
	if logged {
		after = f.hashAt(before.Index + 1)
	} else {
		after = f.hash()
	}
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
	switch {
	case after.Content != before.Content:
		f.t.Errorf("%s changed the state: content %s at index %d, %s at index %d", what, before.Content, before.Index, after.Content, after.Index)
	case !logged && after != before:
		f.t.Errorf("%s reached the log: index %d -> %d", what, before.Index, after.Index)
	case logged && f.c.Node(f.leaderIndex).FSM().AppliedIndex() != before.Index+1:
		f.t.Errorf("%s: not exactly one entry (the refused command) after index %d", what, before.Index)
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
		"depends_on": []string{}, "input_ref": "in", "policy_digest": policyDigest, "catalog_digest": catalogDigest, "model_digest": modelDigest,
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

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
