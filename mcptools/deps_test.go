package mcptools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestToolsAreAClientOfTheCluster: the package's non-test files link the
// client and the SDK, never the cluster, the state machine or a domain,
// so that a tool can only answer what the HTTP API answers.
func TestToolsAreAClientOfTheCluster(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Skipf("no go tool at %s: %v", goTool, err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/arbiterhq/arbiter/mcptools").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || deps[len(deps)-1] != "github.com/arbiterhq/arbiter/mcptools" {
		t.Fatalf("go list -deps answered no dependency list:\n%s", out)
	}
	sawSDK := false
	for _, d := range deps {
		sawSDK = sawSDK || d == "github.com/modelcontextprotocol/go-sdk/mcp"
		if rest, ok := strings.CutPrefix(d, "github.com/arbiterhq/arbiter/"); ok {
			switch rest {
			case "mcptools", "client", "errs", "retry":
			default:
				t.Errorf("mcptools links %s", d)
			}
		}
		for _, bad := range []string{"github.com/hashicorp/raft", "go.etcd.io/bbolt", "github.com/hashicorp/go-memdb"} {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("mcptools links %s", d)
			}
		}
	}
	if !sawSDK {
		t.Error("mcptools does not link the MCP SDK")
	}
}
