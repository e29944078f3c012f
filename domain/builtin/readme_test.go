package builtin_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/domain/builtin"
)

// The README says how many domains builtin.Domains() has and names each
// (issue 43: it said three when there were six). This keeps it true.
func TestReadmeListsTheBuiltinDomains(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(raw)), " ")
	m := regexp.MustCompile("`builtin.Domains\\(\\)` is all (\\w+) \\(([^;]*);").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("the README no longer says \"`builtin.Domains()` is all N (...;\"")
	}
	words := map[string]int{"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
	ds := builtin.Domains()
	if words[m[1]] != len(ds) {
		t.Errorf("the README says %s domains; builtin.Domains() has %d", m[1], len(ds))
	}
	// How the README names each domain.
	called := map[string]string{"access": "access control", "nodes": "node primitives", "authority": "concept authority", "capacity": "capacity leases",
		"workitem": "work items", "allocation": "allocation", "projection": "hook projections"}
	for _, d := range ds {
		name, ok := called[d.Name]
		if !ok {
			t.Errorf("domain %q: say in this test how the README calls it, and list it there", d.Name)
			continue
		}
		if !strings.Contains(m[2], name) {
			t.Errorf("the README's list %q lacks %s (%s)", m[2], name, d.Name)
		}
	}
}
