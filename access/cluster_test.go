package access_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// authCluster is a cluster whose nodes all have *f as their principals
// file (read again at every start), and their guards.
func authCluster(t *testing.T, opts clustertest.Options, f *identity.File) (*clustertest.Cluster, []*access.Guard) {
	t.Helper()
	reg, err := identity.NewRegistry(f.Principals)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	guards := make([]*access.Guard, opts.Nodes)
	opts.Principals = reg
	opts.Domains = func(i int) []domain.Domain {
		// A fresh guard at every start, as a restarted process has.
		g := access.NewGuard()
		if _, err := g.SetFile(*f); err != nil {
			t.Error(err)
		}
		guards[i] = g
		return builtin.With(builtin.Options{Access: g})
	}
	// As arbiter serve does: the guard keeps its copy of the table in the
	// data directory, and the node starts with the registry in force
	// (the copy's, if there is one, else the file's).
	configure := opts.Configure
	opts.Configure = func(i int, cfg *cluster.Config) {
		if err := guards[i].SetCacheFile(filepath.Join(cfg.DataDir, access.CacheFileName)); err != nil {
			t.Error(err)
		}
		cfg.Principals = guards[i].Registry()
		if configure != nil {
			configure(i, cfg)
		}
	}
	c := clustertest.New(t, opts)
	return c, guards
}

// status is the HTTP status node i answers a request with token.
func status(t *testing.T, c *clustertest.Cluster, i int, method, path, token, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, c.URL(i)+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("n%d %s %s: %v", i+1, method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitTable waits until every running node enforces the cluster's table
// (its guard got it from an applied entry).
func waitTable(t *testing.T, c *clustertest.Cluster, guards []*access.Guard) {
	t.Helper()
	if !c.Eventually(20*time.Second, func() bool {
		for _, i := range c.Running() {
			if src, _ := guards[i].InForce(); src != "table" {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the seeded table is not in force on every node")
	}
}

// waitApplied waits until every running node has applied index: the
// moment the change must be in force there.
func waitApplied(t *testing.T, c *clustertest.Cluster, index uint64) {
	t.Helper()
	for _, i := range c.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.Node(i).FSM().WaitApplied(ctx, index)
		cancel()
		if err != nil {
			t.Fatalf("n%d did not apply %d: %v", i+1, index, err)
		}
	}
}

// Issue 37 item 7: a removed principal's token is refused on every node
// as soon as the node has applied the removal (no SIGHUP, no restart),
// and a rotated token likewise; a non-admin cannot add a principal.
func TestRevokedTokenRefusedOnEveryNode(t *testing.T) {
	c, guards := authCluster(t, clustertest.Options{}, bootstrapFile(0))
	waitTable(t, c, guards)
	for i := range 3 {
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "app-token", ""); got != http.StatusOK {
			t.Fatalf("n%d before the removal: %d", i+1, got)
		}
	}

	// A member may not add a principal, on any node; nothing changes.
	before, err := access.NewService(c.Node(0), c.Node(0)).List(as(superAdmin), fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	evil := `{"id": "evil", "tenants": ["*"], "roles": ["admin"], "token_sha256": ["` + identity.HashToken("evil-token") + `"]}`
	for i := range 3 {
		if got := status(t, c, i, http.MethodPost, "/v1/principals", "app-token", evil); got != http.StatusForbidden {
			t.Errorf("n%d: a member adding a principal got %d, want 403", i+1, got)
		}
	}
	after, err := access.NewService(c.Node(1), c.Node(1)).List(as(superAdmin), fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if after.Digest != before.Digest || after.Index != before.Index {
		t.Errorf("refused adds changed the table: %+v, then %+v", before, after)
	}
	if got := status(t, c, 2, http.MethodGet, "/v1/auth/whoami", "evil-token", ""); got != http.StatusUnauthorized {
		t.Errorf("the refused principal's token got %d, want 401", got)
	}

	// The admin removes the member through a follower's API.
	follower := (c.Leader() + 1) % 3
	if got := status(t, c, follower, http.MethodDelete, "/v1/principals/app", "root-token", ""); got != http.StatusOK {
		t.Fatalf("removal through n%d: %d", follower+1, got)
	}
	res, err := access.NewService(c.Node(0), c.Node(0)).List(as(superAdmin), fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, res.Index)
	for i := range 3 {
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "app-token", ""); got != http.StatusUnauthorized {
			t.Errorf("n%d after applying the removal (index %d): the removed token got %d, want 401", i+1, res.Index, got)
		}
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "root-token", ""); got != http.StatusOK {
			t.Errorf("n%d: the admin got %d", i+1, got)
		}
	}

	// Rotation: the old token is refused everywhere once applied, the
	// new one accepted.
	rot, err := access.NewService(c.Node(2), c.Node(2)).Rotate(as(superAdmin), access.RotateRequest{ID: "root", TokenSHA256: []string{identity.HashToken("root-token-2")}})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, rot.Index)
	for i := range 3 {
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "root-token", ""); got != http.StatusUnauthorized {
			t.Errorf("n%d: the rotated-out token got %d, want 401", i+1, got)
		}
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "root-token-2", ""); got != http.StatusOK {
			t.Errorf("n%d: the new token got %d, want 200", i+1, got)
		}
	}
}

// A restored backup brings every node's registry back to the backup's
// table (the module's Restored hook): a principal added after the backup
// was taken is refused on every node once it applied the restore, a
// node that was down meanwhile too (the restore's index is above the
// one of the table copy it restarts with).
func TestRestoreBringsTheRegistryBack(t *testing.T) {
	c, guards := authCluster(t, clustertest.Options{}, bootstrapFile(0))
	waitTable(t, c, guards)
	leader := c.Leader()
	var backup bytes.Buffer
	if err := c.Node(leader).Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	res, err := access.NewService(c.Node(leader), c.Node(leader)).Put(as(superAdmin), access.PutRequest{ID: "late", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}, TokenSHA256: []string{identity.HashToken("late-token")}})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, res.Index)
	for i := range 3 {
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "late-token", ""); got != http.StatusOK {
			t.Fatalf("n%d before the restore: %d", i+1, got)
		}
	}
	leader = c.WaitLeader(10 * time.Second)
	down := (leader + 1) % 3
	c.Stop(down)
	rr, err := c.Node(leader).Restore(context.Background(), &backup)
	if err != nil {
		t.Fatal(err)
	}
	c.Restart(down)
	waitApplied(t, c, rr.Index)
	for i := range 3 {
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "late-token", ""); got != http.StatusUnauthorized {
			t.Errorf("n%d after the restore: the later principal got %d, want 401", i+1, got)
		}
		if got := status(t, c, i, http.MethodGet, "/v1/auth/whoami", "root-token", ""); got != http.StatusOK {
			t.Errorf("n%d after the restore: the admin got %d", i+1, got)
		}
	}
}
