package client_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/deptest"
)

// serverPackages are what a client must not link: the raft host and its
// stores, the state machine's tables, the command line and metrics, and
// the module's server packages.
var serverPackages = []string{
	"github.com/hashicorp/raft",
	"github.com/hashicorp/raft-wal",
	"github.com/hashicorp/raft-boltdb",
	"go.etcd.io/bbolt",
	"github.com/hashicorp/go-memdb",
	"github.com/tidwall/btree",
	"github.com/spf13/cobra",
	"github.com/prometheus/client_golang",
	"github.com/arbiterhq/arbiter/log",
	"github.com/arbiterhq/arbiter/fsm",
	"github.com/arbiterhq/arbiter/cluster",
}

// TestClientLinksNoServer: the package's dependency list (its non-test
// files) holds the standard library, errs and retry, and nothing of the
// server.
func TestClientLinksNoServer(t *testing.T) {
	deps := deptest.Of(t, "github.com/arbiterhq/arbiter/client")
	allowed := map[string]bool{
		"github.com/arbiterhq/arbiter/client": true,
		"github.com/arbiterhq/arbiter/errs":   true,
		"github.com/arbiterhq/arbiter/retry":  true,
	}
	for _, d := range deps {
		for _, bad := range serverPackages {
			if deptest.Under(d, bad) {
				t.Errorf("the client links %s", d)
			}
		}
		// Anything else of the module, or of another module, is new:
		// the standard library's paths have no dot in their first element.
		first, _, _ := strings.Cut(d, "/")
		if !allowed[d] && strings.Contains(first, ".") {
			t.Errorf("the client links %s, which is neither the standard library, errs nor retry", d)
		}
	}
}
