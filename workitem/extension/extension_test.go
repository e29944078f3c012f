package extension_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

func valid() extension.Extension {
	return extension.Extension{Profile: extension.ProfileRef{Name: "build", Version: "2026-01"},
		Dimensions:  extension.Dimensions{CPUMillis: 2000, MemoryMiB: 4096, DiskMiB: 10240, Processes: 4},
		Concurrency: extension.Concurrency{Key: "ci", Limit: 8}, Exclusivity: extension.Exclusivity{Branch: true},
		Repository: "github.com/acme/app", Branch: "feature/x", BaseRef: "main",
		Fairness: extension.Fairness{Group: "team-a", Cost: 3}, HostLabels: map[string]string{"arch": "arm64"},
		AntiAffinity: []string{"db"}, TargetPolicies: []string{"ci-default"}, Disk: extension.DiskPolicy{MinFreeMiB: 512}}
}

func sealedMap(t *testing.T) map[string]any {
	t.Helper()
	_, raw, err := extension.Seal(valid())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// resealed is m as JSON with its fingerprint recomputed, so that only
// the change under test is wrong.
func resealed(t *testing.T, m map[string]any) []byte {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := extension.Fingerprint(raw)
	if err != nil {
		return raw
	}
	m["fingerprint"] = fp
	raw, _ = json.Marshal(m)
	return raw
}

func TestSealAndParse(t *testing.T) {
	e, raw, err := extension.Seal(valid())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.Fingerprint, "v1:") || len(e.Fingerprint) != 67 || e.SchemaVersion != "1" {
		t.Fatalf("sealed %+v", e)
	}
	got, err := extension.Parse(raw)
	if err != nil || got.Fingerprint != e.Fingerprint || got.BranchIdentity() != "feature/x" {
		t.Fatalf("parse: %+v %v", got, err)
	}
	// The fingerprint is of the canonical form: key order, spaces and
	// number spelling do not change it.
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	m["dimensions"] = json.RawMessage(`{ "processes": 4.0, "disk_mib": 10240, "memory_mib": 4096, "cpu_millis": 2e3 }`)
	again, _ := json.MarshalIndent(m, "", "  ")
	if fp, err := extension.Fingerprint(again); err != nil || fp != e.Fingerprint {
		t.Fatalf("fingerprint of the same record spelled otherwise: %s %v", fp, err)
	}
}

func TestParseRefuses(t *testing.T) {
	cases := map[string]struct {
		change func(m map[string]any)
		field  string
		reason string
	}{
		"an unknown field":            {func(m map[string]any) { m["command"] = "rm -rf" }, "command", extension.ReasonInvalid},
		"an unknown nested field":     {func(m map[string]any) { m["disk"].(map[string]any)["max"] = 1 }, "disk.max", extension.ReasonInvalid},
		"a missing field":             {func(m map[string]any) { delete(m, "fairness") }, "fairness", extension.ReasonInvalid},
		"a missing nested field":      {func(m map[string]any) { delete(m["profile"].(map[string]any), "version") }, "profile.version", extension.ReasonInvalid},
		"a null":                      {func(m map[string]any) { m["host_labels"] = nil }, "host_labels", extension.ReasonInvalid},
		"version 2":                   {func(m map[string]any) { m["schema_version"] = "2" }, "schema_version", extension.ReasonInvalid},
		"no version":                  {func(m map[string]any) { delete(m, "schema_version") }, "schema_version", extension.ReasonInvalid},
		"a numeric version":           {func(m map[string]any) { m["schema_version"] = 1 }, "schema_version", extension.ReasonInvalid},
		"a fraction":                  {func(m map[string]any) { m["dimensions"].(map[string]any)["cpu_millis"] = 1.5 }, "dimensions.cpu_millis", extension.ReasonInvalid},
		"a negative":                  {func(m map[string]any) { m["fairness"].(map[string]any)["cost"] = -1 }, "fairness.cost", extension.ReasonInvalid},
		"limit 0":                     {func(m map[string]any) { m["concurrency"].(map[string]any)["limit"] = 0 }, "concurrency.limit", extension.ReasonInvalid},
		"a string for a bool":         {func(m map[string]any) { m["exclusivity"].(map[string]any)["branch"] = "yes" }, "exclusivity.branch", extension.ReasonInvalid},
		"an empty repository":         {func(m map[string]any) { m["repository"] = "" }, "repository", extension.ReasonInvalid},
		"an absolute path":            {func(m map[string]any) { m["repository"] = "/srv/git/app" }, "repository", extension.ReasonInvalid},
		"a windows path":              {func(m map[string]any) { m["base_ref"] = `C:\src` }, "base_ref", extension.ReasonInvalid},
		"a home path":                 {func(m map[string]any) { m["branch"] = "~/work" }, "branch", extension.ReasonInvalid},
		"a URL with a token":          {func(m map[string]any) { m["repository"] = "https://ghp_x@github.com/acme/app" }, "repository", extension.ReasonInvalid},
		"a URL with a password":       {func(m map[string]any) { m["target_policies"] = []any{"https://u:p@h/x"} }, "target_policies[0]", extension.ReasonInvalid},
		"a control character":         {func(m map[string]any) { m["fairness"].(map[string]any)["group"] = "a\nb" }, "fairness.group", extension.ReasonInvalid},
		"a repeated key":              {func(m map[string]any) { m["anti_affinity"] = []any{"a", "a"} }, "anti_affinity[1]", extension.ReasonInvalid},
		"too many labels":             {func(m map[string]any) { m["host_labels"] = manyLabels(17) }, "host_labels", extension.ReasonInvalid},
		"a long identifier":           {func(m map[string]any) { m["repository"] = strings.Repeat("r", 129) }, "repository", extension.ReasonInvalid},
		"an exclusive branch unnamed": {func(m map[string]any) { delete(m, "branch") }, "branch", extension.ReasonInvalid},
	}
	for what, c := range cases {
		m := sealedMap(t)
		c.change(m)
		_, err := extension.Parse(resealed(t, m))
		e := errs.From(err)
		if e == nil || e.Code != errs.CodeInvalid || e.Detail["field"] != c.field || e.Detail["reason"] != c.reason {
			t.Errorf("%s: %v (detail %v), want field %s", what, err, detailOf(e), c.field)
		}
	}
	m := sealedMap(t)
	m["repository"] = "github.com/acme/other" // not resealed
	raw, _ := json.Marshal(m)
	if _, err := extension.Parse(raw); errs.From(err) == nil || errs.From(err).Detail["reason"] != extension.ReasonFingerprintMismatch {
		t.Fatalf("a changed record under the old fingerprint: %v", err)
	}
	m["fingerprint"] = "sha256:abc"
	raw, _ = json.Marshal(m)
	if _, err := extension.Parse(raw); errs.From(err) == nil || errs.From(err).Detail["field"] != "fingerprint" {
		t.Fatalf("a malformed fingerprint: %v", err)
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{`, `null`} {
		if _, err := extension.Parse([]byte(bad)); !errsIs(err, errs.CodeInvalid) {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
}

// Non-exclusive work with only base_ref holds base_ref as its branch
// identity, and keeps base_ref as given.
func TestBaseRefIsTheBranchOfSharedWork(t *testing.T) {
	e := valid()
	e.Exclusivity.Branch, e.Branch = false, ""
	got, _, err := extension.Seal(e)
	if err != nil || got.BranchIdentity() != "main" || got.BaseRef != "main" || got.Branch != "" {
		t.Fatalf("%+v %v", got, err)
	}
	e.BaseRef = ""
	if got, _, err := extension.Seal(e); err != nil || got.BranchIdentity() != "" {
		t.Fatalf("no branch at all: %+v %v", got, err)
	}
	e.Exclusivity.Branch = true
	e.BaseRef = "main"
	if _, _, err := extension.Seal(e); errs.From(err) == nil || errs.From(err).Detail["field"] != "branch" {
		t.Fatalf("exclusive with base_ref only: %v", err)
	}
}

func manyLabels(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[strings.Repeat("k", i+1)] = "v"
	}
	return m
}

func detailOf(e *errs.Error) map[string]any {
	if e == nil {
		return nil
	}
	return e.Detail
}

func errsIs(err error, c errs.Code) bool { e := errs.From(err); return e != nil && e.Code == c }

// Parsing a sealed record (what Apply does at submit and again at every
// reserve) reads the fingerprint off the record's canonical bytes and
// reads each object once, by canon.PlainMembers: at most parseAllocs
// allocations (93 when written), where decoding the record twice and
// putting it in both canonical forms took 1,104 (at 941c7bf; issue 39).
func TestParseAllocations(t *testing.T) {
	const parseAllocs = 150
	_, raw, err := extension.Seal(valid())
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(50, func() {
		if _, err := extension.ParseWith(raw, extension.RFC8785OrLegacy, extension.IdentifiersV2); err != nil {
			t.Fatal(err)
		}
	})
	if n > parseAllocs {
		t.Fatalf("Parse of a sealed record allocates %v times; at most %d", n, parseAllocs)
	}
}
