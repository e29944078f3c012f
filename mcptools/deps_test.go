package mcptools_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/deptest"
)

// TestToolsAreAClientOfTheCluster: the package's non-test files link the
// client, the SDK and the API's document (package api, an embedded
// file), never the cluster, the state machine or a domain, so that a
// tool can only answer what the HTTP API answers.
func TestToolsAreAClientOfTheCluster(t *testing.T) {
	deps := deptest.Of(t, "github.com/arbiterhq/arbiter/mcptools")
	sawSDK := false
	for _, d := range deps {
		sawSDK = sawSDK || d == "github.com/modelcontextprotocol/go-sdk/mcp"
		if rest, ok := strings.CutPrefix(d, "github.com/arbiterhq/arbiter/"); ok {
			switch rest {
			case "mcptools", "client", "errs", "retry", "api":
			default:
				t.Errorf("mcptools links %s", d)
			}
		}
		for _, bad := range []string{"github.com/hashicorp/raft", "go.etcd.io/bbolt", "github.com/hashicorp/go-memdb"} {
			if deptest.Under(d, bad) {
				t.Errorf("mcptools links %s", d)
			}
		}
	}
	if !sawSDK {
		t.Error("mcptools does not link the MCP SDK")
	}
}
