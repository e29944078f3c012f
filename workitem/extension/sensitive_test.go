package extension_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// Issue 40 item 10: credentials, paths, command bodies and raw payloads
// never enter the record. Each class of sensitive value is refused in
// every identifier field, naming the field and the class; IdentifiersV1 (what
// an older log was admitted under) takes what it took.
func TestSensitiveValuesAreRefused(t *testing.T) {
	token := "ghp_" + strings.Repeat("A1b2", 9)
	bad := map[string]struct{ value, class string }{
		"an absolute path":       {"/etc/passwd", extension.ClassPath},
		"a home path":            {"~/work", extension.ClassPath},
		"a drive":                {"C:/src", extension.ClassPath},
		"a URL with a user":      {"https://ghp_x@github.com/acme/app", extension.ClassURL},
		"a step up":              {"../../etc/passwd", extension.ClassPath},
		"a step in place":        {"./build", extension.ClassPath},
		"a step up inside":       {"org/../etc", extension.ClassPath},
		"a doubled slash":        {"org//repo", extension.ClassPath},
		"a trailing slash":       {"org/repo/", extension.ClassPath},
		"a backslash":            {`dir\file`, extension.ClassPath},
		"a file URL":             {"file:///etc/passwd", extension.ClassURL},
		"a file URL, no slashes": {"FILE:etc/passwd", extension.ClassURL},
		"a data URL":             {"data:text/plain;base64,aGk=", extension.ClassShell}, // its ; is shell syntax first
		"a data URL, plain":      {"data:,hi", extension.ClassURL},
		"an https URL":           {"https://example.com/x", extension.ClassURL},
		"a git+ssh URL":          {"git+ssh://host/org/repo", extension.ClassURL},
		"an scp-style remote":    {"git@github.com:org/repo.git", extension.ClassURL},
		"a command":              {"rm -rf / && curl http://x", extension.ClassShell},
		"a separator":            {"a;b", extension.ClassShell},
		"a pipe":                 {"a|b", extension.ClassShell},
		"a substitution":         {"$(id)", extension.ClassShell},
		"backquotes":             {"`id`", extension.ClassShell},
		"a redirection":          {"x>y", extension.ClassShell},
		"a quote":                {"it's", extension.ClassShell},
		"a no-break space":       {"a\u00a0b", extension.ClassShell},
		"a GitHub token":         {token, extension.ClassToken},
		"a token inside":         {"org/" + token, extension.ClassToken},
		"a fine-grained PAT":     {"github_pat_" + strings.Repeat("x", 30), extension.ClassToken},
		"a GitLab token":         {"glpat-" + strings.Repeat("y", 20), extension.ClassToken},
		"a Slack token":          {"xoxb-1234567890-abcdefghij", extension.ClassToken},
		"an API secret key":      {"sk-" + strings.Repeat("z", 40), extension.ClassToken},
		"an AWS key id":          {"AKIAIOSFODNN7EXAMPLE", extension.ClassToken},
		"a JWT":                  {"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", extension.ClassToken},
		"a PEM block":            {"-----BEGIN-PRIVATE-KEY-----", extension.ClassToken},
		"a named secret":         {"Token=abc", extension.ClassToken},
	}
	// Every identifier field of the record, as Parse names it.
	fields := map[string]func(m map[string]any, v string){
		"profile.name":       func(m map[string]any, v string) { m["profile"].(map[string]any)["name"] = v },
		"profile.version":    func(m map[string]any, v string) { m["profile"].(map[string]any)["version"] = v },
		"concurrency.key":    func(m map[string]any, v string) { m["concurrency"].(map[string]any)["key"] = v },
		"repository":         func(m map[string]any, v string) { m["repository"] = v },
		"branch":             func(m map[string]any, v string) { m["branch"] = v },
		"base_ref":           func(m map[string]any, v string) { m["base_ref"] = v },
		"fairness.group":     func(m map[string]any, v string) { m["fairness"].(map[string]any)["group"] = v },
		"host_labels.arch":   func(m map[string]any, v string) { m["host_labels"] = map[string]any{"arch": v} },
		"host_labels key":    func(m map[string]any, v string) { m["host_labels"] = map[string]any{v: "x"} },
		"anti_affinity[0]":   func(m map[string]any, v string) { m["anti_affinity"] = []any{v} },
		"target_policies[0]": func(m map[string]any, v string) { m["target_policies"] = []any{v} },
	}
	for what, c := range bad {
		for field, set := range fields {
			m := sealedMap(t)
			set(m, c.value)
			raw := resealed(t, m)
			_, err := extension.Parse(raw)
			e := errs.From(err)
			if e == nil || e.Code != errs.CodeInvalid || e.Detail["field"] != field || e.Detail["class"] != c.class || e.Detail["reason"] != extension.ReasonInvalid {
				t.Errorf("%s in %s: %v (detail %v), want field %s class %s", what, field, err, detailOf(e), field, c.class)
			}
		}
		if err := extension.Identifier("f", c.value); errs.From(err) == nil || errs.From(err).Detail["class"] != c.class {
			t.Errorf("Identifier(%q): %v, want class %s", c.value, err, c.class)
		}
	}
	// IdentifiersV1 took these: a log admitted under it reads the same.
	m := sealedMap(t)
	m["repository"] = "../../etc/passwd"
	if _, err := extension.ParseWith(resealed(t, m), extension.RFC8785OrLegacy, extension.IdentifiersV1); err != nil {
		t.Fatalf("IdentifiersV1 refuses what it took: %v", err)
	}
}

// Names of repositories, branches, profiles, keys and groups stay
// accepted: "org/repo" is a relative name of plain segments, which a
// reader roots where it wants; "../../etc" is a path because it steps
// out of wherever that is.
func TestIdentifiersStayAccepted(t *testing.T) {
	for _, v := range []string{"org/repo", "github.com/acme/app", "feature/x", "release/2026.01", "users/ann/fix-1",
		"main", "v1.2.3", "2026-01", "team-a", "ci-default", "gpu:a100", "repo.git", "a..b", "ann@corp", "a_b",
		"ghp_short", "sk-team", "sha-" + strings.Repeat("ab", 20), "x=1", "tokens", "日本語/ブランチ"} {
		if err := extension.Identifier("f", v); err != nil {
			t.Errorf("Identifier(%q): %v", v, err)
		}
		e := valid()
		e.Repository, e.Branch, e.Concurrency.Key = v, v, v
		if _, _, err := extension.Seal(e); err != nil {
			t.Errorf("a record with %q: %v", v, err)
		}
	}
}
