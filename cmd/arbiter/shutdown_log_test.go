package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM of the leader of three `arbiter serve` processes logs nothing
// at ERROR, in its own log or the others' (issue 37: it logged `failed to
// decode incoming command` error="transport shutdown"; the new leader's
// failed RPCs to it are WARN). The others' logs are read once the new
// leader has tried to reach the stopped node.
func TestSIGTERMOfTheLeaderLogsNoError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := startE2ECluster(ctx, t)
	for k := range 20 {
		var r e2eCreateReply
		req := e2eCreateReq{NodeID: fmt.Sprintf("sigterm-%d", k), IdempotencyKey: fmt.Sprintf("sigterm-%d", k)}
		if _, err := cl.c.write(ctx, cl.nodes, "/v1/nodes/create", req, &r); err != nil || !r.Created {
			t.Fatalf("create %s: created=%v, %v", req.NodeID, r.Created, err)
		}
	}
	lead, _ := cl.leader(ctx, nil)
	lead.signal(t, syscall.SIGTERM)
	st := lead.waitExit(e2eExitTimeout)
	if st == nil || !st.Success() {
		t.Fatalf("%s after SIGTERM: %v", lead.id, st)
	}
	cl.leader(ctx, lead)
	addr := lead.flag("--raft-addr")
	cl.eventually(ctx, 10*time.Second, "a failed RPC to the stopped leader, logged", func() (bool, string) {
		for _, n := range cl.others(lead) {
			if strings.Contains(n.currentLog(t), addr) && strings.Contains(n.currentLog(t), `msg="failed to`) {
				return true, ""
			}
		}
		return false, "no line yet"
	})
	for _, n := range cl.nodes {
		for _, path := range n.logs {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.SplitSeq(string(raw), "\n") {
				if strings.Contains(line, "level=ERROR") {
					t.Errorf("%s logged at ERROR: %s", n.id, line)
				}
			}
		}
	}
}
