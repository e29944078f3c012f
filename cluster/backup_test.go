package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// memberAddrs lists the members a node knows, with their addresses.
func memberAddrs(n *cluster.Node) string {
	var out []string
	for _, m := range n.Status().Members {
		out = append(out, m.ID+"@"+m.RaftAddr+"/"+m.APIAddr)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// A backup taken from one cluster through a follower's address restores
// into another cluster: every replica there holds the backup's data and
// nothing written before the restore, keeps its own members (so
// forwarding still works), and serves reads and writes right away.
func TestBackupRestoresIntoAnotherCluster(t *testing.T) {
	ctx := context.Background()
	a := clustertest.New(t, clustertest.Options{Nodes: 3})
	aLeader := a.WaitLeader(10 * time.Second)
	for k := 0; k < 50; k++ {
		if _, err := nodesOf(a, aLeader).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("a-%02d", k), Labels: []string{"from-a"}}); err != nil {
			t.Fatal(err)
		}
	}
	var backup bytes.Buffer
	if err := clientOf(t, a.Node((aLeader+1)%3).APIAddr()).Cluster().Snapshot(ctx, &backup); err != nil {
		t.Fatalf("snapshot through a follower's address: %v", err)
	}
	info, err := a.Node(aLeader).FSM().InspectSnapshot(bytes.NewReader(backup.Bytes()))
	if err != nil {
		t.Fatalf("the backup does not inspect: %v", err)
	}

	b := clustertest.New(t, clustertest.Options{Nodes: 3})
	bLeader := b.WaitLeader(10 * time.Second)
	if _, err := nodesOf(b, bLeader).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "b-only"}); err != nil {
		t.Fatal(err)
	}
	// Once every member has registered its API address.
	if !b.Eventually(10*time.Second, func() bool { return !strings.Contains(memberAddrs(b.Node(bLeader))+" ", "/ ") }) {
		t.Fatalf("members never registered their API addresses: %s", memberAddrs(b.Node(bLeader)))
	}
	bMembers := memberAddrs(b.Node(bLeader))
	bIndex := b.Node(bLeader).FSM().AppliedIndex()

	res, err := clientOf(t, b.Node((bLeader+2)%3).APIAddr()).Cluster().Restore(ctx, bytes.NewReader(backup.Bytes()), 0)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	// The index moves on from both the cluster's and the backup's, which
	// is ahead here: an FSM index behind the stream's would go backwards.
	if info.Index <= bIndex {
		t.Fatalf("the backup (index %d) is not ahead of the cluster (%d); the test lost its point", info.Index, bIndex)
	}
	if res.Backup.StateHash != info.StateHash || res.Backup.Rows != info.Rows || res.Index <= info.Index {
		t.Fatalf("restore result %+v; backup %+v, cluster was at index %d", res, info, bIndex)
	}
	b.WaitConverged(20 * time.Second)
	for i := 0; i < 3; i++ {
		page, err := nodesOf(b, i).ByLabel(ctx, nodes.LabelQuery{Label: "from-a", Limit: 128}, fsm.Stale)
		if err != nil || len(page.Nodes) != 50 {
			t.Fatalf("node %d holds %d of the backup's 50 nodes (%v)", i, len(page.Nodes), err)
		}
		if _, err := nodesOf(b, i).Get(ctx, "b-only", fsm.Stale); errs.CodeOf(err) != errs.CodeNotFound {
			t.Fatalf("node %d still has what was written before the restore: %v", i, err)
		}
		if got := memberAddrs(b.Node(i)); got != bMembers {
			t.Fatalf("node %d's members after restore:\n%s\nwant the cluster's own:\n%s", i, got, bMembers)
		}
		if idx := b.Node(i).FSM().AppliedIndex(); idx < res.Index {
			t.Fatalf("node %d applied index %d, behind the restore's %d", i, idx, res.Index)
		}
	}
	// Through a follower: forwarding finds the leader by the kept members;
	// a linearizable read does not wait for some later write.
	follower := nodesOf(b, (b.WaitLeader(10*time.Second)+1)%3)
	if _, err := follower.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "after-restore"}); err != nil {
		t.Fatalf("write through a follower after the restore: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := follower.Get(rctx, "a-00", fsm.Linearizable); err != nil {
		t.Fatalf("linearizable read after the restore: %v", err)
	}
}

// A restore that cannot be taken changes nothing: a damaged backup is
// invalid, one over MaxRestoreBytes too_large, one sent to a follower's
// Node unavailable, naming the leader.
func TestRestoreRefusalsChangeNothing(t *testing.T) {
	ctx := context.Background()
	const limit = 64 << 10
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(_ int, cfg *cluster.Config) {
		cfg.MaxRestoreBytes = limit
	}})
	leader := c.WaitLeader(10 * time.Second)
	if _, err := nodesOf(c, leader).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "kept"}); err != nil {
		t.Fatal(err)
	}
	var good bytes.Buffer
	if err := c.Node(leader).Backup(ctx, &good); err != nil {
		t.Fatal(err)
	}
	if _, err := nodesOf(c, leader).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "after-backup"}); err != nil {
		t.Fatal(err)
	}
	damaged := slices.Clone(good.Bytes())
	damaged[len(damaged)/2] ^= 0xff
	remote := clientOf(t, c.Node((leader+1)%3).APIAddr()).Cluster()
	for name, tc := range map[string]struct {
		body []byte
		want errs.Code
	}{
		"damaged":   {damaged, errs.CodeInvalid},
		"truncated": {good.Bytes()[:good.Len()-1], errs.CodeInvalid},
		"not one":   {[]byte(`{"records": []}`), errs.CodeInvalid},
		// A stream whose header frame claims 1 MiB is read past the limit.
		"too large": {append(append(good.Bytes()[:8:8], 'H', 0, 0x10, 0, 0), make([]byte, 2*limit)...), errs.CodeTooLarge},
	} {
		if _, err := remote.Restore(ctx, bytes.NewReader(tc.body), 0); errs.CodeOf(err) != tc.want {
			t.Errorf("%s backup: %v, want %s", name, err, tc.want)
		}
	}
	// A good backup with a bad bump_index.
	if _, err := remote.Restore(ctx, bytes.NewReader(good.Bytes()), fsm.MaxBumpIndex+1); errs.CodeOf(err) != errs.CodeInvalid {
		t.Errorf("bump_index above the bound: %v, want invalid", err)
	}
	resp, err := http.Post("http://"+c.Node(leader).APIAddr()+"/v1/cluster/restore?bump_index=many", "application/octet-stream", bytes.NewReader(good.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("bump_index=many: status %d, want 422", resp.StatusCode)
	}
	follower := c.Node((leader + 1) % 3)
	_, err = follower.Restore(ctx, bytes.NewReader(good.Bytes()))
	if errs.CodeOf(err) != errs.CodeUnavailable || !strings.Contains(err.Error(), c.Node(leader).ID()) {
		t.Errorf("restore on a follower's Node: %v, want unavailable naming leader %s", err, c.Node(leader).ID())
	}
	if err := follower.Backup(ctx, &bytes.Buffer{}); errs.CodeOf(err) != errs.CodeUnavailable {
		t.Errorf("backup on a follower's Node: %v, want unavailable", err)
	}
	// The backup does not hold after-backup: had any refused restore been
	// applied, it would be gone.
	c.WaitConverged(10 * time.Second)
	for i := 0; i < 3; i++ {
		if _, err := nodesOf(c, i).Get(ctx, "after-backup", fsm.Stale); err != nil {
			t.Fatalf("node %d lost a write to a refused restore: %v", i, err)
		}
	}
}

// A backup of a cluster that went on without it (A, lost after issuing
// more fences) restored into another cluster (B): without a bump, B's
// next log-index fences can repeat ones A issued after the backup; with
// bump_index at least the entries A applied after it, none does.
func TestBumpedRestoreIssuesNoFenceAgain(t *testing.T) {
	ctx := context.Background()
	fence := func(c *clustertest.Cluster, id string) uint64 {
		t.Helper()
		res, err := nodesOf(c, c.WaitLeader(10*time.Second)).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: id,
			IndexFields: nodes.IndexFields{SetIndex: []string{"fence"}}})
		if err != nil || !res.Created {
			t.Fatalf("fenced create of %s: %+v %v", id, res, err)
		}
		return res.Node.ModifiedIndex
	}
	a := clustertest.New(t, clustertest.Options{Nodes: 1})
	fence(a, "before")
	var backup bytes.Buffer
	if err := clientOf(t, a.Node(0).APIAddr()).Cluster().Snapshot(ctx, &backup); err != nil {
		t.Fatal(err)
	}
	var highest uint64 // the last fence A issued before it was lost
	for k := range 40 {
		highest = fence(a, fmt.Sprintf("after-%02d", k))
	}

	for _, bump := range []uint64{0, 1000} {
		b := clustertest.New(t, clustertest.Options{Nodes: 1})
		if _, err := clientOf(t, b.Node(0).APIAddr()).Cluster().Restore(ctx, bytes.NewReader(backup.Bytes()), bump); err != nil {
			t.Fatalf("restore with bump %d: %v", bump, err)
		}
		got := fence(b, "after-restore")
		switch {
		case bump == 0 && got > highest:
			t.Fatalf("without a bump B issued fence %d, above A's %d: the control lost its point", got, highest)
		case bump > 0 && got <= highest:
			t.Fatalf("restored with bump_index %d, B issued fence %d, not above the %d A issued", bump, got, highest)
		}
	}
}

// A leader of a release without bump_index ignores the parameter and
// restores without the bump; the client must not take that for success.
func TestRestoreWithABumpAnOlderLeaderIgnoredFails(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/cluster/status":
			_ = json.NewEncoder(w).Encode(map[string]any{"node_id": "old", "leader_api_addr": strings.TrimPrefix(srv.URL, "http://")})
		case "/v1/cluster/restore": // as a release before bump_index answers
			_ = json.NewEncoder(w).Encode(map[string]any{"backup": map[string]any{"index": 10}, "index": 12})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	remote := clientOf(t, srv.URL).Cluster()
	ctx := context.Background()
	res, err := remote.Restore(ctx, strings.NewReader("backup"), 1000)
	if errs.CodeOf(err) != errs.CodeUnavailable || !strings.Contains(err.Error(), "without bump_index 1000") || res == nil {
		t.Fatalf("a bump the leader ignored: %+v %v, want an error saying so", res, err)
	}
	if _, err := remote.Restore(ctx, strings.NewReader("backup"), 0); err != nil {
		t.Fatalf("no bump asked, none applied: %v", err)
	}
}

// clientOf is a client (package client) of the node at addr alone.
func clientOf(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.New([]string{addr}, client.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
