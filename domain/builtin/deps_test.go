package builtin_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/internal/deptest"
)

// What goes into the log, who runs a command and every domain link no
// raft store: the log's home on disk (package log/store) is the host's
// alone. (The domains still link hashicorp/raft through fsm, whose Apply
// takes raft's log entry.)
func TestDomainsLinkNoRaftStore(t *testing.T) {
	pkgs := []string{"log", "identity", "errs", "fsm", "domain", "access", "nodes", "authority", "capacity", "workitem", "allocation", "projection"}
	for i, p := range pkgs {
		pkgs[i] = "github.com/arbiterhq/arbiter/" + p
	}
	deps := deptest.Of(t, pkgs...)
	for _, d := range deps {
		for _, banned := range []string{"github.com/hashicorp/raft-wal", "github.com/hashicorp/raft-boltdb", "go.etcd.io/bbolt", "github.com/arbiterhq/arbiter/log/store"} {
			if deptest.Under(d, banned) {
				t.Errorf("%s is linked by one of %v", d, pkgs)
			}
		}
	}
}
