package domain

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// Access is what a route asks of its caller. The host authenticates the
// caller and applies the level before the handler runs; the module behind
// the route checks tenants and roles itself.
type Access int

const (
	// Authenticated: any authenticated principal (or another node).
	Authenticated Access = iota + 1
	// Admin: a principal with the admin role (or another node).
	Admin
	// Public: anyone, unauthenticated (health, readiness).
	Public
	// Peer: another node of the cluster only.
	Peer
)

// Route is one HTTP route of a domain: a method and a path, the access it
// needs and its handler. A path segment may be a wildcard "{name}" (a
// whole segment, read with http.Request.PathValue); two routes conflict
// when some request matches both and neither is more specific (the rule
// of net/http's ServeMux, which would panic on them), and CheckRoutes
// refuses that.
type Route struct {
	Method  string
	Path    string
	Access  Access
	Handler http.Handler
	// API describes the request and result for the API document; routes
	// built by Endpoint have it, hand-written handlers may not.
	API *API
}

// Pattern is the route's net/http ServeMux pattern.
func (r Route) Pattern() string { return r.Method + " " + r.Path }

// CheckRoutes validates routes: a known method and access, a path under
// /v1/ of literal segments and "{name}" wildcards, and no pattern in
// taken or conflicting with one (taken is extended).
func CheckRoutes(owner string, routes []Route, taken map[string]string) error {
	for _, r := range routes {
		switch r.Method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete:
		default:
			return fmt.Errorf("%s: route %q: method must be GET, POST, PUT or DELETE", owner, r.Pattern())
		}
		if !strings.HasPrefix(r.Path, "/v1/") || strings.ContainsAny(r.Path, "?# ") || strings.HasSuffix(r.Path, "/") || !validSegments(r.Path) {
			return fmt.Errorf("%s: route %q: path must be under /v1/, without a trailing slash, of literal segments and {name} wildcards", owner, r.Pattern())
		}
		if r.Access < Authenticated || r.Access > Peer {
			return fmt.Errorf("%s: route %q has no access level", owner, r.Pattern())
		}
		if r.Handler == nil {
			return fmt.Errorf("%s: route %q has no handler", owner, r.Pattern())
		}
		if prev, dup := taken[r.Pattern()]; dup {
			return fmt.Errorf("%s: route %q is already served by %s", owner, r.Pattern(), prev)
		}
		for pattern, prev := range taken {
			if conflicts(r.Method, r.Path, pattern) {
				return fmt.Errorf("%s: route %q conflicts with %q of %s", owner, r.Pattern(), pattern, prev)
			}
		}
		taken[r.Pattern()] = owner
	}
	return nil
}

// Params are a request's query parameters, parsed by ParseParams.
type Params struct{ values map[string]string }

// ParseParams checks that r's query holds only allowed keys, each once.
func ParseParams(r *http.Request, allowed ...string) (Params, error) {
	out := map[string]string{}
	for k, vs := range r.URL.Query() {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			return Params{}, errs.Errorf(errs.CodeInvalid, "unknown query parameter %q", k)
		}
		if len(vs) != 1 {
			return Params{}, errs.Errorf(errs.CodeInvalid, "query parameter %q given %d times", k, len(vs))
		}
		out[k] = vs[0]
	}
	return Params{values: out}, nil
}

// String is the parameter's value, "" when absent.
func (p Params) String(name string) string { return p.values[name] }

// Int parses an integer parameter in lo..hi; absent is 0.
func (p Params) Int(name string, lo, hi int) (int, error) {
	return IntParam(name, p.values[name], lo, hi)
}

// IntParam parses the value v of the integer parameter name, in lo..hi;
// "" is 0.
func IntParam(name, v string, lo, hi int) (int, error) {
	if v == "" {
		return 0, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < lo || i > hi {
		return 0, errs.Errorf(errs.CodeInvalid, "%s must be an integer between %d and %d", name, lo, hi)
	}
	return i, nil
}

// Uint parses an unsigned integer parameter; absent is 0.
func (p Params) Uint(name string) (uint64, error) {
	v := p.values[name]
	if v == "" {
		return 0, nil
	}
	u, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, errs.Errorf(errs.CodeInvalid, "%s must be a non-negative integer", name)
	}
	return u, nil
}

// Bool parses a boolean parameter: true or false; absent is false.
func (p Params) Bool(name string) (bool, error) { return BoolParam(name, p.values[name]) }

// BoolParam parses the value v of the boolean parameter name: true or
// false; "" is false.
func BoolParam(name, v string) (bool, error) {
	switch v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, errs.Errorf(errs.CodeInvalid, "%s must be true or false, not %q", name, v)
	}
}

// Consistency parses the consistency parameter: linearizable (the
// default) or stale.
func (p Params) Consistency() (fsm.Consistency, error) {
	switch v := p.values["consistency"]; v {
	case "", "linearizable":
		return fsm.Linearizable, nil
	case "stale":
		return fsm.Stale, nil
	default:
		return 0, errs.Errorf(errs.CodeInvalid, "consistency must be linearizable or stale, not %q", v)
	}
}

// validSegments reports whether every segment of path is a non-empty
// literal without braces or a whole-segment wildcard {name}, name of
// lowercase ASCII letters, digits and '_', each name used once.
func validSegments(path string) bool {
	seen := map[string]bool{}
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if seg == "" {
			return false
		}
		if !strings.ContainsAny(seg, "{}") {
			continue
		}
		name, ok := wildcard(seg)
		if !ok || name == "" || seen[name] {
			return false
		}
		seen[name] = true
		for _, c := range name {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				return false
			}
		}
	}
	return true
}

// wildcard returns the name of a "{name}" segment.
func wildcard(seg string) (string, bool) {
	if len(seg) < 2 || seg[0] != '{' || seg[len(seg)-1] != '}' {
		return "", false
	}
	return seg[1 : len(seg)-1], !strings.ContainsAny(seg[1:len(seg)-1], "{}")
}

// wildcards lists the names of path's "{name}" segments.
func wildcards(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if name, ok := wildcard(seg); ok {
			out = append(out, name)
		}
	}
	return out
}

// conflicts reports whether the route (method, path) and the taken
// pattern ("METHOD /path") match a common request with neither more
// specific than the other: ServeMux's conflict, for patterns whose
// segments are literals or whole-segment wildcards.
func conflicts(method, path, pattern string) bool {
	otherMethod, otherPath, _ := strings.Cut(pattern, " ")
	if otherMethod != method {
		return false
	}
	a := strings.Split(path, "/")
	b := strings.Split(otherPath, "/")
	if len(a) != len(b) {
		return false
	}
	aInB, bInA := true, true // every request a matches, b matches (and back)
	for i := range a {
		_, wa := wildcard(a[i])
		_, wb := wildcard(b[i])
		switch {
		case !wa && !wb && a[i] != b[i]:
			return false // disjoint
		case wa && !wb:
			aInB = false
		case wb && !wa:
			bInA = false
		}
	}
	return aInB == bInA // equivalent, or overlapping without either containing the other
}
