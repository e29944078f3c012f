package domain_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/domain"
)

func TestCheckRoutesWildcards(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, tc := range []struct {
		path  string
		valid bool
	}{
		{"/v1/things", true},
		{"/v1/things/{thing_id}", true},
		{"/v1/things/{thing_id}/current", true},
		{"/v1/things/{a}/{b}", true},
		{"/v1/things/{a}/{a}", false},      // a name twice
		{"/v1/things/{}", false},           // no name
		{"/v1/things/{Id}", false},         // not lowercase
		{"/v1/things/{id...}", false},      // no multi-segment wildcards
		{"/v1/things/x{id}", false},        // not a whole segment
		{"/v1/things/{id}x", false},        // not a whole segment
		{"/v1/things/{id", false},          // unbalanced
		{"/v1/things/{id}/", false},        // trailing slash
		{"/v1/things/{$}", false},          // ServeMux's end anchor
		{"/v2/things/{thing_id}", false},   // not under /v1/
		{"/v1/things/{thing_id}?x", false}, // query in a path
	} {
		err := domain.CheckRoutes("test", []domain.Route{{Method: http.MethodGet, Path: tc.path, Access: domain.Authenticated, Handler: ok}}, map[string]string{})
		if (err == nil) != tc.valid {
			t.Errorf("CheckRoutes(%q) = %v, want valid %v", tc.path, err, tc.valid)
		}
	}
}

// A GET route's request receives its path's wildcards and its query
// parameters; the path's name as a query parameter is refused.
func TestGetPathParameters(t *testing.T) {
	type echo struct{ ID, Format string }
	type query struct {
		ID     string `path:"thing_id"`
		Format string `query:"format"`
	}
	r := domain.Endpoint[query, echo]{Method: http.MethodGet, Path: "/v1/things/{thing_id}", Access: domain.Authenticated, Call: func(_ context.Context, q query) (*echo, error) {
		return &echo{ID: q.ID, Format: q.Format}, nil
	}}.Route()
	mux := http.NewServeMux()
	mux.Handle(r.Pattern(), r.Handler)
	get := func(target string) (int, string) {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	code, body := get("/v1/things/pt_1?format=short")
	var got echo
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || got != (echo{ID: "pt_1", Format: "short"}) {
		t.Fatalf("GET = %d %s", code, body)
	}
	if code, body := get("/v1/things/pt_1?thing_id=other"); code != http.StatusUnprocessableEntity {
		t.Fatalf("a path parameter given again in the query: %d %s, want 422", code, body)
	}
}
