package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// member list asked first of a node that knows no leader (here one cut
// off from the others; in life one restarted a moment ago) answers from
// another endpoint of --addr that knows one.
func TestMemberListAsksPastANodeWithoutALeader(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	cut, other := (leader+1)%3, (leader+2)%3
	c.Isolate(cut)
	t.Cleanup(c.Heal)
	if !c.Eventually(10*time.Second, func() bool {
		_, id := c.Node(cut).Raft().LeaderWithID()
		return id == ""
	}) {
		t.Fatal("the isolated node still knows a leader")
	}
	env := map[string]string{"ARBITER_ADDR": c.URL(cut) + "," + c.URL(other)}
	r := runCLI(t, env, "", "member", "list", "-o", "json")
	var list memberList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("status %d, stdout %q, stderr %q: %v", r.status, r.stdout, r.stderr, err)
	}
	if list.LeaderID == "" || len(list.Members) != 3 {
		t.Fatalf("asked a node without a leader first, member list answered %+v", list)
	}
}
