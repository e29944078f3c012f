// Package deptest lists what a package links, for the tests that hold a
// package to a dependency rule (the client links no server, the MCP
// tools only the client, the domains no raft store): one way to ask
// `go list -deps`, and one way to fail when it cannot answer.
package deptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Of is every package the named packages link (their non-test files),
// standard library included, as `go list -deps` lists them. It skips the
// test if the go tool is not beside the running toolchain, and fails it
// if go list cannot answer.
func Of(t testing.TB, pkgs ...string) []string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Skipf("no go tool at %s: %v", goTool, err)
	}
	out, err := exec.Command(goTool, append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %v: %v\n%s", pkgs, err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(pkgs) {
		t.Fatalf("go list -deps %v named %d packages: %q", pkgs, len(deps), out)
	}
	return deps
}

// Under reports whether pkg is prefix or a package below it.
func Under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }
