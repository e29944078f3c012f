package access_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/access"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// A node that lags behind the log (its applies held back) still
// authenticates a principal the leader has since removed: it enforces the
// table it has applied. It forwards that principal's write to the leader,
// where the write meets the table inside Apply and is refused (403), and
// nothing is written on any node. A linearizable read, which the leader
// answers, is refused the same way; a stale one is answered by the
// lagging node as it stands, as stale reads say they may be.
func TestLaggingNodeCannotWriteForARemovedPrincipal(t *testing.T) {
	file := bootstrapFile(0)
	file.Principals = append(file.Principals, pc("ops", []string{"*"}, []string{identity.RoleAdmin}, "ops-token"))
	c, guards := authCluster(t, clustertest.Options{}, file)
	waitTable(t, c, guards)
	leader := c.Leader()
	lag := (leader + 1) % 3
	create := func(i int, id string, timeout time.Duration) int {
		t.Helper()
		return createAs(t, c, i, "ops-token", id, timeout)
	}
	if got := create(lag, "before", 10*time.Second); got != http.StatusOK {
		t.Fatalf("ops's create through n%d before anything: %d", lag+1, got)
	}
	c.WaitConverged(30 * time.Second) // every node holds "before": a stale read finds it

	release := c.HoldApply(lag)
	defer release()
	if _, err := access.NewService(c.Node(leader), c.Node(leader)).Remove(as(superAdmin), "ops"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, c, leader, http.MethodGet, "/v1/auth/whoami", "ops-token", ""); got != http.StatusUnauthorized {
		t.Fatalf("the leader still takes the removed token: %d", got)
	}
	if got := status(t, c, lag, http.MethodGet, "/v1/auth/whoami", "ops-token", ""); got != http.StatusOK {
		t.Fatalf("n%d, held back, refuses the removed token already (%d): it does not lag, the test shows nothing", lag+1, got)
	}
	if got := create(lag, "after-removal", 10*time.Second); got != http.StatusForbidden {
		t.Fatalf("the removed principal's write through the lagging n%d: %d, want 403", lag+1, got)
	}
	readsThroughTheLaggingNode(t, c, lag, "ops-token", "the removed principal")
	release()
	c.WaitConverged(30 * time.Second)
	for i := range 3 {
		rec, err := nodes.On(c.Node(i)).Get(context.Background(), "after-removal", fsm.Stale)
		if !errors.Is(err, errs.NotFound) {
			t.Fatalf("n%d: %+v %v: the removed principal's write through a lagging node was applied", i+1, rec, err)
		}
	}
}

// createAs creates a node through node i with a bearer token, and
// returns the HTTP status (0: no answer within timeout).
func createAs(t *testing.T, c *clustertest.Cluster, i int, token, id string, timeout time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL(i)+"/v1/nodes/create", strings.NewReader(`{"node_id":"`+id+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The same with a token rotated away rather than a principal removed: the
// lagging node still takes the old token, and sends its name beside the
// command it forwards (identity.Principal.Cred); the leader meets it with
// the principal's tokens in the table it has applied and refuses it
// (403), though the principal, its tenants and its roles are all
// unchanged. The new token writes through the same node once it has
// caught up.
func TestLaggingNodeCannotWriteWithARotatedToken(t *testing.T) {
	file := bootstrapFile(0)
	file.Principals = append(file.Principals, pc("ops", []string{"*"}, []string{identity.RoleAdmin}, "ops-token"))
	c, guards := authCluster(t, clustertest.Options{}, file)
	waitTable(t, c, guards)
	leader := c.Leader()
	lag := (leader + 1) % 3
	if got := createAs(t, c, lag, "ops-token", "before", 10*time.Second); got != http.StatusOK {
		t.Fatalf("ops's create through n%d before anything: %d", lag+1, got)
	}
	c.WaitConverged(30 * time.Second) // every node holds "before": a stale read finds it

	release := c.HoldApply(lag)
	defer release()
	if _, err := access.NewService(c.Node(leader), c.Node(leader)).Rotate(as(superAdmin),
		access.RotateRequest{ID: "ops", TokenSHA256: []string{identity.HashToken("ops-token-2")}}); err != nil {
		t.Fatal(err)
	}
	if got := status(t, c, leader, http.MethodGet, "/v1/auth/whoami", "ops-token", ""); got != http.StatusUnauthorized {
		t.Fatalf("the leader still takes the rotated-away token: %d", got)
	}
	if got := status(t, c, lag, http.MethodGet, "/v1/auth/whoami", "ops-token", ""); got != http.StatusOK {
		t.Fatalf("n%d, held back, refuses the old token already (%d): it does not lag, the test shows nothing", lag+1, got)
	}
	if got := createAs(t, c, lag, "ops-token", "after-rotation", 10*time.Second); got != http.StatusForbidden {
		t.Fatalf("the rotated-away token's write through the lagging n%d: %d, want 403", lag+1, got)
	}
	readsThroughTheLaggingNode(t, c, lag, "ops-token", "the rotated-away token")
	release()
	c.WaitConverged(30 * time.Second)
	for i := range 3 {
		rec, err := nodes.On(c.Node(i)).Get(context.Background(), "after-rotation", fsm.Stale)
		if !errors.Is(err, errs.NotFound) {
			t.Fatalf("n%d: %+v %v: the old token's write through a lagging node was applied", i+1, rec, err)
		}
	}
	if got := createAs(t, c, lag, "ops-token-2", "with-the-new-token", 10*time.Second); got != http.StatusOK {
		t.Fatalf("the new token through n%d once caught up: %d", lag+1, got)
	}
}

// readsThroughTheLaggingNode checks that node lag, which still takes
// token, forwards a linearizable read with it to the leader, which
// refuses it (403), and answers a stale read itself (200).
func readsThroughTheLaggingNode(t *testing.T, c *clustertest.Cluster, lag int, token, who string) {
	t.Helper()
	if got := status(t, c, lag, http.MethodGet, "/v1/nodes/get?node_id=before", token, ""); got != http.StatusForbidden {
		t.Fatalf("%s's linearizable read through the lagging n%d: %d, want 403", who, lag+1, got)
	}
	if got := status(t, c, lag, http.MethodGet, "/v1/nodes/get?node_id=before&consistency=stale", token, ""); got != http.StatusOK {
		t.Fatalf("%s's stale read through the lagging n%d: %d, want 200 (answered as the node stands)", who, lag+1, got)
	}
}
