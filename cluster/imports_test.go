package cluster_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// The host knows no domain: nothing package cluster imports, directly or
// through other packages of this module, is a domain package or the list
// of built-in domains. (Domains plug in through package domain.)
func TestClusterImportsNoDomain(t *testing.T) {
	const module = "github.com/arbiterhq/arbiter"
	forbidden := map[string]bool{}
	for _, d := range []string{"access", "nodes", "authority", "capacity", "workitem", "allocation", "projection", "domain/builtin"} {
		forbidden[module+"/"+d] = true
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(path string, chain []string)
	walk = func(path string, chain []string) {
		if seen[path] {
			return
		}
		seen[path] = true
		chain = append(chain, path)
		if forbidden[path] {
			t.Errorf("cluster imports a domain: %s", strings.Join(chain, " -> "))
			return
		}
		pkg, err := build.Import(path, filepath.Join(root, strings.TrimPrefix(path, module)), 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				walk(imp, chain)
			}
		}
	}
	walk(module+"/cluster", nil)
	if len(seen) < 5 {
		t.Fatalf("walked only %v: the walk is broken", seen)
	}
}
