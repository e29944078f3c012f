package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// errorLines are the lines of lines logged at ERROR.
func errorLines(lines []string) []string {
	var out []string
	for _, line := range lines {
		if strings.Contains(line, " ERROR ") {
			out = append(out, line)
		}
	}
	return out
}

// A graceful Shutdown logs nothing at ERROR, on the node that stops or on
// the others, for the leader and for a follower (issue 37: a SIGTERM of
// the leader logged `failed to decode incoming command` error="transport
// shutdown", raft's transport refusing RPCs that arrived while it closed).
// The leader's failures to reach the stopped member are WARN: a member
// down is something to look at, not a fault of the node that logs it.
// It runs over TCP: raft's network transport is the one that logged.
func TestGracefulShutdownLogsNoError(t *testing.T) {
	l := &loud{}
	c := clustertest.New(t, clustertest.Options{Nodes: 3, TCP: true, Configure: func(i int, cfg *cluster.Config) {
		cfg.Logger = slog.New(l.handler(fmt.Sprintf("n%d", i+1)))
	}})
	ctx := context.Background()
	shutdown := func(i int, role string) {
		t.Helper()
		for k := range 20 {
			mustCreate(t, apiBase(c, c.WaitLeader(10*time.Second)), map[string]any{"node_id": fmt.Sprintf("%s-%d", role, k)})
		}
		l.take()
		addr := c.Node(i).RaftAddr()
		if err := c.Node(i).Shutdown(ctx); err != nil {
			t.Fatalf("shutdown of the %s: %v", role, err)
		}
		c.Stop(i)
		// The others go on, and their leader has found the stopped node
		// gone (a failed RPC to it), so that what that logs is counted.
		c.WaitLeader(10 * time.Second)
		var lines []string
		noticed := c.Eventually(10*time.Second, func() bool {
			lines = append(lines, l.take()...)
			for _, line := range lines {
				if strings.Contains(line, "failed to") && strings.Contains(line, addr) {
					return true
				}
			}
			return false
		})
		if !noticed {
			t.Fatalf("the leader never logged a failed RPC to the stopped %s at %s: the test lost its point; lines:\n%s", role, addr, strings.Join(lines, "\n"))
		}
		if lines := errorLines(lines); len(lines) > 0 {
			t.Errorf("a graceful shutdown of the %s logged %d lines at ERROR:\n%s", role, len(lines), strings.Join(lines, "\n"))
		}
		c.Restart(i)
		c.WaitVoters(10 * time.Second)
	}
	c.WaitLeader(10 * time.Second)
	c.WaitVoters(10 * time.Second)
	leader := c.WaitLeader(10 * time.Second)
	shutdown(leader, "leader")
	shutdown((c.WaitLeader(10*time.Second)+1)%3, "follower")
}
