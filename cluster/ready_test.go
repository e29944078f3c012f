package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// /readyz?require= names the commands a caller needs; a cluster that
// does not enable one of them is an incompatible deployment: 503 naming
// every missing one (also in detail.missing), never 200.
func TestReadyzRequiresCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	c.WaitEnabled(10 * time.Second)
	base := apiBase(c, 0)
	if !c.Eventually(10*time.Second, func() bool { return apiGet(t, base+"/readyz").status == 200 }) {
		t.Fatalf("readyz: %s", apiGet(t, base+"/readyz").body)
	}

	// Commands by their name with or without the domain's prefix, a
	// whole domain, a least version.
	apiGet(t, base+"/readyz?require=capacity.acquire,workitem.workitem_submit,projection,capacity.acquire@2").ok(t, "readyz with enabled commands", nil)

	r := apiGet(t, base+"/readyz?require=capacity.acquire,nosuch.thing,workitem.frobnicate,capacity.acquire@9,nodes")
	r.wantError(t, "readyz with missing commands", 503, errs.CodeUnavailable)
	var body struct {
		Error struct {
			Message string `json:"message"`
			Detail  struct {
				Missing []string `json:"missing"`
			} `json:"detail"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	want := []string{"nosuch.thing", "workitem.frobnicate", "capacity.acquire@9"}
	if !slices.Equal(body.Error.Detail.Missing, want) {
		t.Errorf("detail.missing = %q, want %q", body.Error.Detail.Missing, want)
	}
	for _, m := range want {
		if !strings.Contains(body.Error.Message, m) {
			t.Errorf("message %q does not name %s", body.Error.Message, m)
		}
	}
	if strings.Contains(body.Error.Message, "capacity.acquire,") || strings.Contains(body.Error.Message, "nodes") {
		t.Errorf("message %q names an enabled requirement", body.Error.Message)
	}

	for _, bad := range []string{"capacity..acquire", "Capacity.acquire", "capacity.acquire@0", "capacity.acquire@x", "a.b.c"} {
		apiGet(t, base+"/readyz?require="+bad).wantError(t, "readyz?require="+bad, 422, errs.CodeInvalid)
	}
	apiGet(t, base+"/readyz?require="+strings.Repeat("nodes,", 65)+"nodes").wantError(t, "readyz with 66 requirements", 422, errs.CodeInvalid)
}

// The Go client asks the same check: Remote.Ready, and a Remote made
// WithRequire refuses to submit work to a cluster that lacks a command,
// before anything is sent.
func TestRemoteRequiresCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	c.WaitEnabled(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr := c.Node(0).APIAddr()
	if !c.Eventually(10*time.Second, func() bool { return rawremote.New(addr).Ready(ctx) == nil }) {
		t.Fatalf("never ready: %v", rawremote.New(addr).Ready(ctx))
	}
	if err := rawremote.New(addr).Ready(ctx, "nodes.create", "capacity.acquire"); err != nil {
		t.Fatalf("Ready with enabled commands: %v", err)
	}
	err := rawremote.New("127.0.0.1:1", addr).Ready(ctx, "nodes.create", "nosuch.thing")
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.CodeUnavailable || !strings.Contains(e.Message, "nosuch.thing") {
		t.Fatalf("Ready with a missing command: %v", err)
	}

	lacking := rawremote.New(addr).WithRequire("nodes.create", "nosuch.thing")
	_, err = nodes.On(lacking).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "not-submitted"})
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "nosuch.thing") || errs.IsOutcomeUnknown(err) {
		t.Fatalf("create through a remote requiring a missing command: %v", err)
	}
	plain := rawremote.New(addr)
	if _, err := nodes.On(plain).Get(ctx, "not-submitted", fsm.Linearizable); !errors.Is(err, errs.NotFound) {
		t.Fatalf("the refused create was submitted: %v", err)
	}
	having := rawremote.New(addr).WithRequire("nodes.create")
	if _, err := nodes.On(having).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "submitted"}); err != nil {
		t.Fatalf("create through a remote requiring enabled commands: %v", err)
	}
}

// A follower that restarts is ready only once it has applied what the
// leader had committed when it came back, not as soon as it hears of a
// leader: the issue saw /readyz 200 at applied index 0 (a restarted
// node's commit index is 0 until the leader's replication reaches it, and
// raft's heartbeats, which name the leader, carry no commit index), and
// stale reads answering 404 for what exists. Here the follower restarts
// cut off, and hears one heartbeat from the leader, exactly the state
// the issue met; then the network heals.
func TestReadyAfterRestartMeansCaughtUp(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	f := (leader + 1) % c.Size()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := nodes.NewClient(c.Node(leader), c.Node(leader))
	write := func(prefix string) {
		t.Helper()
		for i := range 20 {
			if _, err := client.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("%s-%d", prefix, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("before")
	c.Isolate(f)
	c.Stop(f)
	write("away")
	committed := c.Node(leader).Status().CommitIndex
	c.Restart(f)
	node := c.Node(f)
	if err := node.Ready(); err == nil {
		t.Fatal("ready while cut off")
	}
	// A stale read answers from what the node has, and says how stale.
	r := apiGet(t, getURL(apiBase(c, f), "away-19", "consistency=stale"))
	r.wantError(t, "stale read of what the node has not applied", 404, errs.CodeNotFound)
	wantStaleness(t, r, "false", func(applied uint64) bool { return applied < committed }, func(ms int64) bool { return ms == -1 })

	// One heartbeat of the leader: the node knows a leader, and its
	// commit index is still 0.
	lead := c.Node(leader)
	_, fake := raft.NewInmemTransport("fake")
	fake.Connect(raft.ServerAddress(node.RaftAddr()), c.InmemTransport(f))
	heartbeat := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(lead.ID()), Addr: []byte(lead.RaftAddr())},
		Term:      max(lead.Raft().CurrentTerm(), node.Raft().CurrentTerm()),
		Leader:    []byte(lead.RaftAddr()),
	}
	var resp raft.AppendEntriesResponse
	if err := fake.AppendEntries(raft.ServerID(node.ID()), raft.ServerAddress(node.RaftAddr()), heartbeat, &resp); err != nil {
		t.Fatal(err)
	}
	if id := node.Status().LeaderID; id != lead.ID() {
		t.Fatalf("after the heartbeat the node knows leader %q, want %q", id, lead.ID())
	}
	if err := node.Ready(); err == nil {
		t.Fatalf("ready at applied index %d, knowing a leader but nothing it had committed (%d)", node.Status().AppliedIndex, committed)
	}
	apiGet(t, apiBase(c, f)+"/readyz").wantError(t, "readyz before catching up", 503, errs.CodeUnavailable)

	c.Heal()
	deadline := time.Now().Add(30 * time.Second)
	for node.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("never ready: %v", node.Ready())
		}
		runtime.Gosched()
	}
	if applied := node.Status().AppliedIndex; applied < committed {
		t.Fatalf("ready at applied index %d; the leader had committed %d when the node restarted", applied, committed)
	}
	got, err := nodes.On(node).Get(ctx, "away-19", fsm.Stale)
	if err != nil || got.NodeID != "away-19" {
		t.Fatalf("stale read once ready: %v %v", got, err)
	}
	r = apiGet(t, getURL(apiBase(c, f), "away-19", "consistency=stale"))
	r.ok(t, "stale read once ready", nil)
	wantStaleness(t, r, "true", func(applied uint64) bool { return applied >= committed }, func(ms int64) bool { return ms >= 0 })
	if l := c.Leader(); l >= 0 {
		r = apiGet(t, getURL(apiBase(c, l), "away-19", "consistency=stale"))
		wantStaleness(t, r, "true", func(applied uint64) bool { return applied >= committed }, func(ms int64) bool { return ms == 0 })
	}
	if r := apiGet(t, getURL(apiBase(c, f), "away-19")); r.header.Get("Arbiter-Applied-Index") != "" {
		t.Errorf("a linearizable read carries Arbiter-Applied-Index %q", r.header.Get("Arbiter-Applied-Index"))
	}
}

// wantStaleness checks the headers a stale read carries.
func wantStaleness(t *testing.T, r apiReply, caughtUp string, applied func(uint64) bool, contact func(int64) bool) {
	t.Helper()
	a, err := strconv.ParseUint(r.header.Get("Arbiter-Applied-Index"), 10, 64)
	if err != nil || !applied(a) {
		t.Errorf("Arbiter-Applied-Index %q (%v)", r.header.Get("Arbiter-Applied-Index"), err)
	}
	ms, err := strconv.ParseInt(r.header.Get("Arbiter-Leader-Contact-Ms"), 10, 64)
	if err != nil || !contact(ms) {
		t.Errorf("Arbiter-Leader-Contact-Ms %q (%v)", r.header.Get("Arbiter-Leader-Contact-Ms"), err)
	}
	if got := r.header.Get("Arbiter-Caught-Up"); got != caughtUp {
		t.Errorf("Arbiter-Caught-Up %q, want %q", got, caughtUp)
	}
}
