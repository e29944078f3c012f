package domain

import (
	"net/http"
	"strings"
	"testing"
)

func TestCheckRoutesWildcards(t *testing.T) {
	h := http.NotFoundHandler()
	r := func(method, path string) Route {
		return Route{Method: method, Path: path, Access: Authenticated, Handler: h}
	}
	for _, tc := range []struct {
		name   string
		routes []Route
		bad    string
	}{
		{"literal and wildcard", []Route{r("GET", "/v1/spaces/{slug}"), r("GET", "/v1/spaces/list"), r("POST", "/v1/spaces/{slug}/tasks/{id}")}, ""},
		{"methods apart", []Route{r("GET", "/v1/a/{x}"), r("PUT", "/v1/a/{y}")}, ""},
		{"same shape", []Route{r("GET", "/v1/a/{x}"), r("GET", "/v1/a/{y}")}, "conflicts"},
		{"crossed", []Route{r("GET", "/v1/a/{x}/b"), r("GET", "/v1/a/b/{y}")}, "conflicts"},
		{"partial brace", []Route{r("GET", "/v1/a/x{y}")}, "path must"},
		{"bad name", []Route{r("GET", "/v1/a/{Y}")}, "path must"},
		{"empty name", []Route{r("GET", "/v1/a/{}")}, "path must"},
		{"empty segment", []Route{r("GET", "/v1//a")}, "path must"},
	} {
		err := CheckRoutes("test", tc.routes, map[string]string{})
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.bad)
		}
	}
}
