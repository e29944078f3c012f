package builtin_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// What goes into the log, who runs a command and every domain link no
// raft store: the log's home on disk (package log/store) is the host's
// alone. (The domains still link hashicorp/raft through fsm, whose Apply
// takes raft's log entry.)
func TestDomainsLinkNoRaftStore(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	pkgs := []string{"log", "identity", "errs", "fsm", "domain", "nodes", "authority", "capacity", "workitem", "allocation", "projection"}
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for _, p := range pkgs {
		args = append(args, "github.com/arbiterhq/arbiter/"+p)
	}
	out, err := exec.Command(goTool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(pkgs) {
		t.Fatalf("go list named %d packages for %d asked: %q", len(deps), len(pkgs), out)
	}
	for _, d := range deps {
		for _, banned := range []string{"github.com/hashicorp/raft-wal", "github.com/hashicorp/raft-boltdb", "go.etcd.io/bbolt", "github.com/arbiterhq/arbiter/log/store"} {
			if d == banned || strings.HasPrefix(d, banned+"/") {
				t.Errorf("%s is linked by one of %v", d, pkgs)
			}
		}
	}
}
