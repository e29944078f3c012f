package access_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// logBuffer collects what the nodes log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// count is how many lines hold every fragment.
func (b *logBuffer) count(fragments ...string) int {
	n := 0
	for _, line := range strings.Split(b.String(), "\n") {
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(line, f)
		}
		if all {
			n++
		}
	}
	return n
}

func capture(logs *logBuffer) func(int, *cluster.Config) {
	return func(_ int, cfg *cluster.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
}

func waitLog(t *testing.T, c *clustertest.Cluster, logs *logBuffer, n int, fragments ...string) {
	t.Helper()
	if !c.Eventually(20*time.Second, func() bool { return logs.count(fragments...) >= n }) {
		t.Fatalf("no %d log lines with %q; the log:\n%s", n, fragments, logs.String())
	}
}

// The file is the bootstrap source, never a silent override at restart:
// it seeds a cluster with no table; an admin's change survives a restart
// with the same file (and the node WARNs that its file differs); a
// higher file_version replaces the table.
func TestFileSeedsButNeverUndoesAnAdminsChange(t *testing.T) {
	logs := &logBuffer{}
	file := bootstrapFile(0)
	c, guards := authCluster(t, clustertest.Options{Nodes: 1, Configure: capture(logs)}, file)
	waitTable(t, c, guards)
	waitLog(t, c, logs, 1, "level=INFO", "this file seeded the cluster's table")
	svc := func() *access.Service { return access.NewService(c.Node(0), c.Node(0)) }

	if _, err := svc().Put(as(superAdmin), access.PutRequest{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("ops-token")}}); err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	c.Restart(0)
	c.WaitLeader(20 * time.Second)
	waitLog(t, c, logs, 1, "level=WARN", "differs from the cluster's table")
	if got := ids(t, svc()); got != "app,ops,root" {
		t.Fatalf("after a restart with the same file: %s, want the admin's app,ops,root", got)
	}
	if src, _ := guards[0].InForce(); src != "table" {
		t.Errorf("in force after the restart: %q, want table", src)
	}
	if got := status(t, c, 0, "GET", "/v1/auth/whoami", "ops-token", ""); got != 200 {
		t.Errorf("the admin's principal after the restart: %d", got)
	}

	// A higher file_version wins, and says so.
	file.FileVersion = 1
	c.Stop(0)
	c.Restart(0)
	c.WaitLeader(20 * time.Second)
	waitLog(t, c, logs, 2, "level=INFO", "this file seeded the cluster's table")
	if got := ids(t, svc()); got != "app,root" {
		t.Fatalf("after a restart with file_version 1: %s, want the file's app,root", got)
	}
	if got := status(t, c, 0, "GET", "/v1/auth/whoami", "ops-token", ""); got != 401 {
		t.Errorf("a principal the newer file dropped: %d, want 401", got)
	}
}

// Nothing secret is in the raft log, a snapshot or a backup, nor in the
// nodes' logs, nor in a node's copy of the table (SetCacheFile): the
// tokens used to authenticate and the token of a principal added through
// the API are absent from every file of every data directory, while
// their hashes are there (the scan reads what the state holds).
func TestNoTokenInLogSnapshotOrBackup(t *testing.T) {
	logs := &logBuffer{}
	c, guards := authCluster(t, clustertest.Options{TCP: true, Configure: capture(logs)}, bootstrapFile(0))
	waitTable(t, c, guards)
	const opsToken = "ops-plaintext-token-6c1f0e"
	// As `arbiter principal add` does: the token stays with the client,
	// its hash goes to the cluster.
	if got := status(t, c, 1, "POST", "/v1/principals", "root-token",
		`{"id": "ops", "tenants": ["*"], "roles": ["admin"], "token_sha256": ["`+identity.HashToken(opsToken)+`"]}`); got != 201 {
		t.Fatalf("add: %d", got)
	}
	res, err := access.NewService(c.Node(0), c.Node(0)).List(as(superAdmin), fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, res.Index)
	for i := range 3 {
		if got := status(t, c, i, "GET", "/v1/auth/whoami", opsToken, ""); got != 200 {
			t.Fatalf("n%d: the new principal: %d", i+1, got)
		}
	}
	rot, err := access.NewService(c.Node(2), c.Node(2)).Rotate(as(superAdmin), access.RotateRequest{ID: "app", TokenSHA256: []string{identity.HashToken("app-rotated-token")}})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, rot.Index)
	for i := range 3 {
		c.Snapshot(i)
	}
	leader := c.Leader()
	var backup bytes.Buffer
	if err := c.Node(leader).Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}

	secrets := []string{"root-token", "app-token", opsToken, "app-rotated-token"}
	hashes := []string{identity.HashToken("root-token"), identity.HashToken(opsToken), identity.HashToken("app-rotated-token")}
	found := map[string]int{}
	scan := func(where string, b []byte) {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the token %q", where, s)
			}
		}
		for _, h := range hashes {
			if bytes.Contains(b, []byte(h)) {
				found[h]++
			}
		}
	}
	scan("the backup", backup.Bytes())
	scan("the nodes' log", []byte(logs.String()))
	snapshots, copies := 0, 0
	for i := range 3 {
		err := filepath.WalkDir(c.DataDir(i), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(path, "snapshots") && strings.HasSuffix(path, "state.bin") {
				snapshots++
			}
			if filepath.Base(path) == access.CacheFileName {
				copies++
			}
			scan(path, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if snapshots < 3 {
		t.Errorf("scanned %d snapshot files, want one per node at least", snapshots)
	}
	if copies != 3 {
		t.Errorf("scanned %d copies of the table (%s), want one per node", copies, access.CacheFileName)
	}
	for _, h := range hashes {
		// In the backup, and in each node's log, snapshot and copy of
		// the table.
		if found[h] < 1+3+3 {
			t.Errorf("hash %s found %d times: the scan does not read what the state holds", h[:8], found[h])
		}
	}
}

// Issue 37 item 7: a restarted node never accepts a token the cluster
// revoked. A follower whose last snapshot predates a removal restarts
// while the other nodes are down (no leader: it cannot replay the log):
// the table it last applied, kept in its data directory, is in force
// from its first request, not its file and not the snapshot's older
// table. Without that copy (a fresh node) the file is in force, as it
// always was; once the node replays, the cluster's table is.
func TestRestartedNodeKeepsTheTableItLastApplied(t *testing.T) {
	logs := &logBuffer{}
	c, guards := authCluster(t, clustertest.Options{Configure: capture(logs)}, bootstrapFile(0))
	waitTable(t, c, guards)
	f := (c.Leader() + 1) % 3
	// The follower's snapshot holds the seeded table, app included.
	c.Snapshot(f)
	res, err := access.NewService(c.Node(f), c.Node(f)).Remove(as(superAdmin), "app")
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, res.Index)
	if got := status(t, c, f, "GET", "/v1/auth/whoami", "app-token", ""); got != 401 {
		t.Fatalf("n%d after the removal: %d", f+1, got)
	}
	for i := range 3 {
		c.Stop(i)
	}

	c.Restart(f)
	if got := status(t, c, f, "GET", "/v1/auth/whoami", "app-token", ""); got != 401 {
		t.Errorf("n%d restarted without a leader: the revoked token got %d, want 401", f+1, got)
	}
	if got := status(t, c, f, "GET", "/v1/auth/whoami", "root-token", ""); got != 200 {
		t.Errorf("n%d restarted without a leader: the admin got %d, want 200", f+1, got)
	}
	if src, index := guards[f].InForce(); src != "copy" || index != res.Index {
		t.Errorf("n%d in force: %q at %d, want copy at %d", f+1, src, index, res.Index)
	}
	waitLog(t, c, logs, 1, "level=INFO", "the table this node last applied", fmt.Sprintf("index=%d", res.Index))

	// A node without a copy starts as it always did: with its file.
	c.Stop(f)
	if err := os.Remove(filepath.Join(c.DataDir(f), access.CacheFileName)); err != nil {
		t.Fatal(err)
	}
	c.Restart(f)
	if got := status(t, c, f, "GET", "/v1/auth/whoami", "app-token", ""); got != 200 {
		t.Errorf("n%d restarted without a copy: the file's token got %d, want 200 (the file is the bootstrap source)", f+1, got)
	}
	if src, _ := guards[f].InForce(); src != "table" && src != "file" {
		t.Errorf("n%d without a copy: %q in force", f+1, src)
	}

	// Once a leader exists, the node replays: the cluster's table is in
	// force again, and the copy is back.
	for i := range 3 {
		if i != f {
			c.Restart(i)
		}
	}
	c.WaitLeader(20 * time.Second)
	if !c.Eventually(20*time.Second, func() bool {
		src, index := guards[f].InForce()
		return src == "table" && index >= res.Index
	}) {
		t.Fatalf("n%d did not replay the removal", f+1)
	}
	if got := status(t, c, f, "GET", "/v1/auth/whoami", "app-token", ""); got != 401 {
		t.Errorf("n%d after replaying: the revoked token got %d, want 401", f+1, got)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir(f), access.CacheFileName)); err != nil {
		t.Errorf("n%d after replaying: no copy: %v", f+1, err)
	}
}
