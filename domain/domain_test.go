package domain_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

func TestCheckRefusesBadSets(t *testing.T) {
	if err := domain.Check(builtin.Domains()); err != nil {
		t.Fatalf("the built-in set is refused: %v", err)
	}
	renamed := counterDomain()
	renamed.Name = "other"
	for name, tc := range map[string]struct {
		set  []domain.Domain
		want string
	}{
		"bad name":        {[]domain.Domain{{Name: "Caps!"}}, "domain name"},
		"twice":           {[]domain.Domain{{Name: "a"}, {Name: "a"}}, "listed twice"},
		"missing require": {[]domain.Domain{{Name: "a", Requires: []string{"b"}}}, `requires domain "b"`},
		"module renamed":  {[]domain.Domain{renamed}, `has a module named "counters"`},
	} {
		if err := domain.Check(tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}
}

func TestCheckRoutes(t *testing.T) {
	h := http.NotFoundHandler()
	ok := domain.Route{Method: "GET", Path: "/v1/x/y", Access: domain.Authenticated, Handler: h}
	taken := map[string]string{}
	if err := domain.CheckRoutes("a", []domain.Route{ok}, taken); err != nil {
		t.Fatalf("valid route refused: %v", err)
	}
	for name, r := range map[string]domain.Route{
		"served twice":   ok,
		"method":         {Method: "PATCH", Path: "/v1/p", Access: domain.Admin, Handler: h},
		"not under /v1/": {Method: "GET", Path: "/x", Access: domain.Admin, Handler: h},
		"part wildcard":  {Method: "GET", Path: "/v1/x{id}", Access: domain.Admin, Handler: h},
		"trailing slash": {Method: "GET", Path: "/v1/x/", Access: domain.Admin, Handler: h},
		"no access":      {Method: "GET", Path: "/v1/q", Handler: h},
		"no handler":     {Method: "GET", Path: "/v1/r", Access: domain.Admin},
	} {
		if err := domain.CheckRoutes("b", []domain.Route{r}, taken); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The POST adapter decodes strictly, answers the status the route asks
// for, and carries a result that explains a refusal in error.detail.
func TestPostAdapter(t *testing.T) {
	type req struct {
		N int `json:"n"`
	}
	type res struct {
		Decision errs.Decision `json:"decision"`
		N        int           `json:"n"`
	}
	route := domain.Endpoint[req, res]{Method: http.MethodPost, Path: "/v1/t", Access: domain.Authenticated, Call: func(_ context.Context, r req) (*res, error) {
		if r.N < 0 {
			out := &res{Decision: errs.Decision(errs.CodeExhausted), N: r.N}
			return out, out.Decision.Err("too many")
		}
		return &res{Decision: errs.Granted, N: r.N}, nil
	}, Status: func(*res) int { return http.StatusCreated }, Statuses: []int{http.StatusCreated}, Errors: domain.ResultInDetail}.Route()
	do := func(body string) (int, map[string]any) {
		w := httptest.NewRecorder()
		route.Handler.ServeHTTP(w, httptest.NewRequest("POST", "/v1/t", strings.NewReader(body)))
		var out map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &out)
		return w.Code, out
	}
	if code, out := do(`{"n":2}`); code != 201 || out["n"] != 2.0 {
		t.Errorf("success: %d %v", code, out)
	}
	for _, body := range []string{`{"n":2,"x":1}`, `{"n":2} {}`, "{\"n\":\"\xff\"}", `{"n":"\udc00"}`} {
		if code, _ := do(body); code != 422 {
			t.Errorf("%q: %d, want 422", body, code)
		}
	}
	code, out := do(`{"n":-1}`)
	e, _ := out["error"].(map[string]any)
	detail, _ := e["detail"].(map[string]any)
	if code != 409 || e["code"] != "exhausted" || detail["decision"] != "exhausted" || detail["result"] == nil {
		t.Errorf("refusal: %d %v", code, out)
	}
}

func TestParams(t *testing.T) {
	parse := func(q string) (domain.Params, error) {
		return domain.ParseParams(httptest.NewRequest("GET", "/v1/t?"+q, nil), "a", "n", "consistency")
	}
	p, err := parse("a=x&n=5&consistency=stale")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Int("n", 1, 10); err != nil || n != 5 || p.String("a") != "x" {
		t.Errorf("got %d %q %v", n, p.String("a"), err)
	}
	if c, err := p.Consistency(); err != nil || c != fsm.Stale {
		t.Errorf("consistency %v %v", c, err)
	}
	if _, err := p.Int("n", 6, 10); err == nil {
		t.Error("out of range accepted")
	}
	for _, q := range []string{"b=1", "a=1&a=2"} {
		if _, err := parse(q); err == nil {
			t.Errorf("%q accepted", q)
		}
	}
	if p, _ := parse("consistency=maybe"); p.String("consistency") == "maybe" {
		if _, err := p.Consistency(); err == nil {
			t.Error("consistency=maybe accepted")
		}
	}
}
