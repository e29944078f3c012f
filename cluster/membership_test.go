package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// standaloneConfig is a node config with clustertest's fast timings, for
// nodes a test starts by hand.
func standaloneConfig(t *testing.T, id string) cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.Domains = builtin.Domains()
	cfg.ID = id
	cfg.DataDir = filepath.Join(t.TempDir(), id)
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.NoSyncUnsafe = true
	cfg.HeartbeatTimeout = 200 * time.Millisecond
	cfg.ElectionTimeout = 200 * time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	cfg.TickInterval = 100 * time.Millisecond
	cfg.ApplyTimeout = 5 * time.Second
	return cfg
}

// steadyTimings widens clustertest's raft timings (200ms heartbeat, 100ms
// lease) for tests that are not about elections: under -race on a loaded
// machine the fast ones sometimes depose a healthy leader, and a write in
// flight then ends with an unknown outcome.
func steadyTimings(_ int, cfg *cluster.Config) {
	cfg.HeartbeatTimeout = 500 * time.Millisecond
	cfg.ElectionTimeout = 500 * time.Millisecond
	cfg.LeaderLeaseTimeout = 250 * time.Millisecond
}

// startNode builds and starts a node within timeout and closes it at the
// end of the test.
func startNode(t *testing.T, cfg cluster.Config, timeout time.Duration) *cluster.Node {
	t.Helper()
	n, err := cluster.New(cfg)
	if err != nil {
		t.Fatalf("new %s: %v", cfg.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", cfg.ID, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func statusVia(t *testing.T, base string) cluster.Status {
	t.Helper()
	var st cluster.Status
	apiGet(t, base+"/v1/cluster/status").ok(t, "status", &st)
	return st
}

// memberSet renders members as sorted "id raft api voter" strings.
func memberSet(ms []cluster.MemberStatus) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s %s %s %v", m.ID, m.RaftAddr, m.APIAddr, m.Voter))
	}
	slices.Sort(out)
	return out
}

// wantMembers is memberSet of the given running nodes, all voters.
func wantMembers(nodes ...*cluster.Node) []string {
	var ms []cluster.MemberStatus
	for _, n := range nodes {
		ms = append(ms, cluster.MemberStatus{ID: n.ID(), RaftAddr: n.RaftAddr(), APIAddr: n.APIAddr(), Voter: true})
	}
	return memberSet(ms)
}

// configLog records the indexes of the raft configuration entries a node
// stores, to show whether a request changed the configuration (raft
// v1.7.3's GetConfiguration does not report the configuration's index).
type configLog struct {
	raft.LogStore
	mu  sync.Mutex
	idx []uint64
}

func (l *configLog) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

func (l *configLog) StoreLogs(es []*raft.Log) error {
	l.mu.Lock()
	for _, e := range es {
		if e.Type == raft.LogConfiguration && !slices.Contains(l.idx, e.Index) {
			l.idx = append(l.idx, e.Index)
		}
	}
	l.mu.Unlock()
	return l.LogStore.StoreLogs(es)
}

func (l *configLog) indexes() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.idx)
	slices.Sort(out)
	return out
}

// recordConfigs opens cfg's boltdb stores itself, with the log store
// wrapped in a configLog.
func recordConfigs(t *testing.T, cfg *cluster.Config) *configLog {
	t.Helper()
	s, err := logstore.Open(cfg.DataDir, logstore.Options{NoSyncUnsafe: true})
	if err != nil {
		t.Fatalf("open stores of %s: %v", cfg.ID, err)
	}
	l := &configLog{LogStore: s.Log}
	cfg.Stores = &cluster.Stores{Log: l, Stable: s.Stable, Snapshot: s.Snapshot, Close: s.Close}
	return l
}

// memberEventsAfter lists member_upsert and member_remove events after seq.
func memberEventsAfter(t *testing.T, base string, seq uint64) []string {
	t.Helper()
	var out []string
	for {
		var p feedPage
		apiGet(t, fmt.Sprintf("%s/v1/changes?after=%d", base, seq)).ok(t, "changes", &p)
		if len(p.Events) == 0 {
			return out
		}
		for _, e := range p.Events {
			if e.Kind == "member_upsert" || e.Kind == "member_remove" {
				out = append(out, e.Kind+" "+e.Key)
			}
		}
		seq = p.Next
	}
}

// A brand-new node joins through a follower and becomes a voter that
// serves reads and writes; joins are idempotent; a raft address already in
// use is refused; unknown members cannot be removed; the new node is
// removed through a follower.
func TestMembershipJoinServeAndRemove(t *testing.T) {
	logs := map[int]*configLog{}
	c := clustertest.New(t, clustertest.Options{TCP: true, Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		steadyTimings(i, cfg)
		logs[i] = recordConfigs(t, cfg)
	}})
	members := []*cluster.Node{c.Node(0), c.Node(1), c.Node(2)}
	// configs returns each node's configuration entries once every node
	// has applied a write made after the calls being checked.
	syncs := 0
	configs := func() [][]uint64 {
		t.Helper()
		syncs++
		id := fmt.Sprintf("sync-%d", syncs)
		mustCreate(t, apiBase(c, c.WaitLeader(10*time.Second)), map[string]any{"node_id": id})
		var out [][]uint64
		for i := range 3 {
			if !c.Eventually(10*time.Second, func() bool {
				return apiGet(t, getURL(apiBase(c, i), id, "consistency=stale")).status == 200
			}) {
				t.Fatalf("n%d never applied %s", i+1, id)
			}
			out = append(out, logs[i].indexes())
		}
		return out
	}
	want3 := wantMembers(members...)
	for i := range 3 {
		var got []string
		if !c.Eventually(10*time.Second, func() bool {
			got = memberSet(statusVia(t, apiBase(c, i)).Members)
			return slices.Equal(got, want3)
		}) {
			t.Fatalf("n%d status members %v, want %v", i+1, got, want3)
		}
	}

	leader := c.WaitLeader(10 * time.Second)
	f, other := (leader+1)%3, (leader+2)%3
	lb, fb := apiBase(c, leader), apiBase(c, f)

	cfg := standaloneConfig(t, "n4")
	steadyTimings(3, &cfg)
	cfg.Join = []string{fb}
	n4 := startNode(t, cfg, 15*time.Second)
	n4b := "http://" + n4.APIAddr()
	want4 := wantMembers(append(members, n4)...)
	var got []string
	if !c.Eventually(10*time.Second, func() bool {
		got = memberSet(statusVia(t, lb).Members)
		return slices.Equal(got, want4)
	}) {
		t.Fatalf("after join, members %v, want %v", got, want4)
	}

	// The new voter serves: a write through the leader reaches its local
	// state, and it forwards a write and a linearizable read.
	mustCreate(t, lb, map[string]any{"node_id": "before-n4-reads"})
	if !c.Eventually(10*time.Second, func() bool {
		return apiGet(t, getURL(n4b, "before-n4-reads", "consistency=stale")).status == 200
	}) {
		t.Fatal("n4 never applied a write made through the leader")
	}
	if res := mustCreate(t, n4b, map[string]any{"node_id": "via-n4"}); !res.Created {
		t.Fatalf("create via n4: %+v", res)
	}
	apiGet(t, getURL(n4b, "via-n4")).ok(t, "linearizable get via n4", nil)
	apiGet(t, getURL(apiBase(c, other), "via-n4")).ok(t, "get via another node of the write through n4", nil)
	if st := statusVia(t, n4b); st.LeaderID != members[leader].ID() && c.Leader() == leader {
		t.Errorf("n4 sees leader %q, want %s", st.LeaderID, members[leader].ID())
	}

	// Joining again with the same request succeeds and changes nothing.
	before := configs()
	if len(before[0]) < 3 {
		t.Fatalf("configuration entries %v: want at least bootstrap and two joins", before)
	}
	seq := feedLastSeq(t, lb)
	join := cluster.JoinRequest{ID: "n4", RaftAddr: n4.RaftAddr(), APIAddr: n4.APIAddr()}
	for k := range 2 {
		var res map[string]bool
		apiPost(t, fb+"/v1/cluster/join", join).ok(t, fmt.Sprintf("repeated join %d", k+1), &res)
		if !res["joined"] {
			t.Errorf("repeated join %d: %v", k+1, res)
		}
	}
	if after := configs(); !reflect.DeepEqual(after, before) {
		t.Errorf("repeated join changed the raft configuration: entries %v -> %v", before, after)
	}
	if evs := memberEventsAfter(t, lb, seq); len(evs) != 0 {
		t.Errorf("repeated join changed member metadata: %v", evs)
	}
	if got := memberSet(statusVia(t, lb).Members); !slices.Equal(got, want4) {
		t.Errorf("after repeated join, members %v, want %v", got, want4)
	}

	// A raft address that belongs to another member is refused.
	conflict := cluster.JoinRequest{ID: "n9", RaftAddr: members[other].RaftAddr(), APIAddr: "127.0.0.1:9"}
	apiPost(t, fb+"/v1/cluster/join", conflict).wantError(t, "join with another member's raft address", 409, errs.CodeConflict)
	apiPost(t, lb+"/v1/cluster/join", conflict).wantError(t, "same join on the leader", 409, errs.CodeConflict)
	if evs := memberEventsAfter(t, lb, seq); len(evs) != 0 {
		t.Errorf("refused join changed member metadata: %v", evs)
	}

	// Removing a member that does not exist is not_found.
	apiPost(t, fb+"/v1/cluster/remove", cluster.RemoveRequest{ID: "nobody"}).wantError(t, "remove of an unknown id", 404, errs.CodeNotFound)
	if after := configs(); !reflect.DeepEqual(after, before) {
		t.Errorf("refused join and remove changed the raft configuration: entries %v -> %v", before, after)
	}
	if evs := memberEventsAfter(t, lb, seq); len(evs) != 0 {
		t.Errorf("refused remove changed member metadata: %v", evs)
	}

	// Remove n4 through a follower.
	var removed map[string]bool
	apiPost(t, fb+"/v1/cluster/remove", cluster.RemoveRequest{ID: "n4"}).ok(t, "remove n4", &removed)
	if !removed["removed"] {
		t.Errorf("remove n4: %v", removed)
	}
	for i := range 3 {
		if !c.Eventually(10*time.Second, func() bool {
			got = memberSet(statusVia(t, apiBase(c, i)).Members)
			return slices.Equal(got, want3)
		}) {
			t.Errorf("n%d after remove: members %v, want %v", i+1, got, want3)
		}
		var meta []fsm.Member
		if !c.Eventually(10*time.Second, func() bool {
			meta = c.Node(i).FSM().Members()
			return !slices.ContainsFunc(meta, func(m fsm.Member) bool { return m.ID == "n4" })
		}) {
			t.Errorf("n%d still holds metadata of removed n4: %+v", i+1, meta)
		}
	}
	apiPost(t, fb+"/v1/cluster/remove", cluster.RemoveRequest{ID: "n4"}).wantError(t, "second remove of n4", 404, errs.CodeNotFound)

	// The three keep committing without n4, and n4 no longer receives the log.
	if res := mustCreate(t, fb, map[string]any{"node_id": "after-remove"}); !res.Created {
		t.Errorf("write after remove: %+v", res)
	}
	for i := range 3 {
		if !c.Eventually(10*time.Second, func() bool {
			return apiGet(t, getURL(apiBase(c, i), "after-remove", "consistency=stale")).status == 200
		}) {
			t.Errorf("n%d never applied a write made after the remove", i+1)
		}
	}
	if n4.Raft().State() != raft.Shutdown {
		if _, err := nodes.On(n4).Get(context.Background(), "after-remove", fsm.Stale); !errors.Is(err, errs.NotFound) {
			t.Errorf("removed n4 still receives the log: stale get of a later write gave %v", err)
		}
	}
}

// A graceful Shutdown of the leader hands leadership to another voter.
// The followers' heartbeat timeout is 2s, so an ordinary election could not
// produce a leader within about 2s of the leader going away; a leader that
// appears well before then was handed the office.
func TestGracefulShutdownHandsOverLeadership(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{TCP: true, Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		steadyTimings(i, cfg)
		if i != 0 {
			cfg.HeartbeatTimeout = 2 * time.Second
			cfg.ElectionTimeout = 2 * time.Second
		}
	}})
	old := c.WaitLeader(10 * time.Second)
	oldID := c.Node(old).ID()
	// The voters and their metadata are in place before the handover.
	if !c.Eventually(10*time.Second, func() bool {
		return len(memberSet(statusVia(t, apiBase(c, old)).Members)) == 3 && len(c.Node(old).FSM().Members()) == 3
	}) {
		t.Fatal("three members never registered")
	}
	var rest []int
	for i := range c.Size() {
		if i != old {
			rest = append(rest, i)
		}
	}

	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Node(old).Shutdown(ctx); err != nil {
		t.Fatalf("graceful shutdown of the leader: %v", err)
	}
	newLeader := -1
	if !c.Eventually(5*time.Second, func() bool {
		for _, i := range rest {
			if c.Node(i).IsLeader() {
				newLeader = i
				return true
			}
		}
		return false
	}) {
		t.Fatal("no new leader after the leader's graceful shutdown")
	}
	took := time.Since(begin)
	t.Logf("new leader %s %v after the shutdown began", c.Node(newLeader).ID(), took)
	if c.Node(newLeader).ID() == oldID {
		t.Fatalf("new leader is the old one")
	}
	if took > 1500*time.Millisecond {
		t.Errorf("a new leader took %v; a handover should beat the followers' 2s election timeout", took)
	}
	var follower int
	for _, i := range rest {
		if i != newLeader {
			follower = i
		}
	}
	if !c.Eventually(5*time.Second, func() bool {
		return statusVia(t, apiBase(c, follower)).LeaderID == c.Node(newLeader).ID()
	}) {
		t.Errorf("the remaining follower does not see the new leader")
	}
	if res := mustCreate(t, apiBase(c, follower), map[string]any{"node_id": "after-handover"}); !res.Created {
		t.Errorf("write after the handover: %+v", res)
	}
}

// A stopped follower restarts on its data and catches up, also when it is
// restarted with Bootstrap set: existing state wins over the flags.
func TestRestartedFollowerCatchesUp(t *testing.T) {
	var mu sync.Mutex
	bootstrapOnStart := map[int]bool{}
	c := clustertest.New(t, clustertest.Options{TCP: true, Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		steadyTimings(i, cfg)
		mu.Lock()
		defer mu.Unlock()
		if bootstrapOnStart[i] {
			cfg.Bootstrap, cfg.Join = true, nil
		}
	}})
	leader := c.WaitLeader(10 * time.Second)
	write := func(id string) {
		t.Helper()
		n := c.Node(c.WaitLeader(10 * time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if res, err := nodes.On(n).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: id}); err != nil || !res.Created {
			t.Fatalf("create %s: %+v %v", id, res, err)
		}
	}
	caughtUp := func(i int, id string) {
		t.Helper()
		if !c.Eventually(10*time.Second, func() bool {
			return apiGet(t, getURL(apiBase(c, i), id, "consistency=stale")).status == 200
		}) {
			t.Fatalf("restarted n%d never applied %s", i+1, id)
		}
	}

	for k, restartBootstrap := range []bool{false, true} {
		f := (leader + 1 + k) % c.Size()
		if c.Node(f).IsLeader() {
			continue
		}
		mu.Lock()
		bootstrapOnStart[f] = restartBootstrap
		mu.Unlock()
		c.Stop(f)
		id := fmt.Sprintf("while-n%d-down", f+1)
		write(id)
		c.Restart(f)
		caughtUp(f, id)
		st := statusVia(t, apiBase(c, f))
		if len(st.Members) != 3 {
			t.Errorf("restarted n%d (bootstrap=%v) sees members %v", f+1, restartBootstrap, memberSet(st.Members))
		}
		if l := c.Leader(); l >= 0 && st.LeaderID != c.Node(l).ID() {
			t.Errorf("restarted n%d (bootstrap=%v) follows %q, the leader is %s", f+1, restartBootstrap, st.LeaderID, c.Node(l).ID())
		}
	}
	write("after-restarts")
	for i := range c.Size() {
		caughtUp(i, "after-restarts")
	}
	c.WaitConverged(10 * time.Second)
}

// A node with existing state resumes with whatever Bootstrap and Join say:
// Join naming an unreachable member does not block Start, and Bootstrap
// does not start a new cluster.
func TestNodeResumesOnExistingDataWhateverItsFlags(t *testing.T) {
	base := standaloneConfig(t, "solo")
	base.Bootstrap = true
	first := startNode(t, base, 10*time.Second)
	// Keep the addresses the data directory records.
	base.RaftAddr, base.HTTPAddr = first.RaftAddr(), first.APIAddr()
	waitLeading := func(n *cluster.Node) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !n.IsLeader() || apiGet(t, "http://"+n.APIAddr()+"/readyz").status != 200 {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not lead its one-node cluster: %+v", n.ID(), n.Status())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitLeading(first)
	mustCreate(t, "http://"+first.APIAddr(), map[string]any{"node_id": "written-first"})
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name      string
		bootstrap bool
		join      []string
	}{
		{"join an unreachable member", false, []string{"http://" + deadAddr(t)}},
		{"bootstrap again", true, nil},
		{"neither", false, nil},
	}
	written := []string{"written-first"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Bootstrap, cfg.Join = tc.bootstrap, tc.join
			begin := time.Now()
			n := startNode(t, cfg, 5*time.Second)
			t.Logf("started in %v", time.Since(begin))
			waitLeading(n)
			b := "http://" + n.APIAddr()
			for _, id := range written {
				apiGet(t, getURL(b, id)).ok(t, "get "+id+" after restart", nil)
			}
			st := n.Status()
			if got := memberSet(st.Members); len(got) != 1 || st.Members[0].ID != "solo" || st.Members[0].RaftAddr != base.RaftAddr {
				t.Errorf("members after restart: %v", got)
			}
			id := "written-" + tc.name
			if res := mustCreate(t, b, map[string]any{"node_id": id}); !res.Created {
				t.Fatalf("create %s: %+v", id, res)
			}
			written = append(written, id)
			if err := n.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A Start cancelled while joining returns the context's error and shuts
// down quietly: nothing at ERROR level (the HTTP server used to report
// its listener closed under it), and the node's ports are released.
func TestStartCancelledDuringJoinShutsDownQuietly(t *testing.T) {
	logs := &hardBuf{}
	cfg := standaloneConfig(t, "joiner")
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.Join = []string{"http://" + deadAddr(t)}
	node, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := node.Start(ctx); err == nil {
		t.Fatal("a join to nowhere succeeded")
	}
	if _, err := net.Dial("tcp", node.APIAddr()); err == nil {
		t.Errorf("the API address %s still accepts connections after the failed start", node.APIAddr())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a cancelled start logged errors:\n%s", logs.String())
	}
}

// The fault harness's Replace of a node that leads (a follower it chose a
// moment before may have won an election since) moves leadership first,
// then removes, wipes and rejoins it: the seed loop's
// TestFaultsTCP/concepts failed when Replace refused a node that had
// come to lead.
func TestHarnessReplacesANodeThatLeads(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	l := c.WaitLeader(10 * time.Second)
	c.Replace(l, 30*time.Second)
	c.WaitVoters(30 * time.Second)
	c.WaitConverged(30 * time.Second)
}
