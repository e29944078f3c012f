package domain_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
)

// An Endpoint binds path, query, header and body into one request, in
// that declared shape, and tells the API document what it bound.
func TestEndpointBinds(t *testing.T) {
	type body struct {
		N int `json:"n"`
	}
	type req struct {
		ID   string          `path:"id" type:"integer"`
		Cons fsm.Consistency `query:"consistency"`
		Key  []string        `header:"Idempotency-Key"`
		Body body            `body:""`
	}
	var got req
	r := domain.Endpoint[req, body]{Method: http.MethodPost, Path: "/v1/x/{id}", Access: domain.Authenticated,
		Call: func(_ context.Context, q req) (*body, error) { got = q; return &q.Body, nil }}.Route()
	mux := http.NewServeMux()
	mux.Handle(r.Pattern(), r.Handler)
	do := func(target, payload string, key ...string) (int, string) {
		w := httptest.NewRecorder()
		hr := httptest.NewRequest(http.MethodPost, target, strings.NewReader(payload))
		for _, k := range key {
			hr.Header.Add("Idempotency-Key", k)
		}
		mux.ServeHTTP(w, hr)
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	if code, out := do("/v1/x/7?consistency=stale", `{"n":3}`, "k1"); code != 200 || out != `{"n":3}` ||
		got.ID != "7" || got.Cons != fsm.Stale || len(got.Key) != 1 || got.Key[0] != "k1" {
		t.Fatalf("bound %+v: %d %s", got, code, out)
	}
	for _, bad := range []struct{ target, body string }{
		{"/v1/x/7?other=1", `{"n":3}`},           // an undeclared query parameter
		{"/v1/x/7?consistency=maybe", `{"n":3}`}, // not a consistency
		{"/v1/x/7", `{"n":3,"m":1}`},             // an unknown body field
	} {
		if code, out := do(bad.target, bad.body); code != http.StatusUnprocessableEntity {
			t.Errorf("%s %s: %d %s, want 422", bad.target, bad.body, code, out)
		}
	}
	if len(r.API.Params) != 3 || r.API.Params[0].Name != "id" || r.API.Params[0].In != "path" || r.API.Params[0].Type != "integer" || r.API.Body.Name() != "body" {
		t.Errorf("API %+v", r.API)
	}
}

// A route whose request misses a wildcard, or has a field it does not
// bind, is refused when it is built.
func TestEndpointRefusesBadBindings(t *testing.T) {
	type noPath struct {
		Q string `query:"q"`
	}
	type stray struct {
		ID    string `path:"id"`
		Other string
	}
	for name, build := range map[string]func(){
		"unbound wildcard": func() {
			domain.Endpoint[noPath, noPath]{Method: http.MethodGet, Path: "/v1/x/{id}", Access: domain.Authenticated}.Route()
		},
		"untagged field": func() {
			domain.Endpoint[stray, stray]{Method: http.MethodGet, Path: "/v1/x/{id}", Access: domain.Authenticated}.Route()
		},
		"status without statuses": func() {
			domain.Endpoint[noPath, noPath]{Method: http.MethodGet, Path: "/v1/x", Access: domain.Authenticated, Status: func(*noPath) int { return 201 }}.Route()
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: built", name)
				}
			}()
			build()
		}()
	}
}
