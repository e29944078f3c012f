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
// authenticates with the table it has applied: a principal the leader has
// since removed, or a token the leader has since rotated away. It
// forwards that principal's write to the leader, which refuses it (403):
// a removed principal meets the table inside Apply; a rotated token meets
// it on the leader before it proposes, since the lagging node sends the
// name of the credential beside the command (identity.Principal.Cred).
// Nothing is written on any node. A linearizable read, which the leader
// answers, is refused the same way; a stale one is answered by the
// lagging node as it stands, as stale reads say they may be. With a
// rotation, the new token writes through the same node once it has
// caught up.
func TestLaggingNodeCannotActForAnAuthorityTheLogTookAway(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*access.Service) error
		after  string // the token that writes once the node caught up ("": none)
	}{
		{"principal removed", func(s *access.Service) error {
			_, err := s.Remove(as(superAdmin), "ops")
			return err
		}, ""},
		{"token rotated away", func(s *access.Service) error {
			_, err := s.Rotate(as(superAdmin), access.RotateRequest{ID: "ops", TokenSHA256: []string{identity.HashToken("ops-token-2")}})
			return err
		}, "ops-token-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			if err := tc.change(access.NewService(c.Node(leader), c.Node(leader))); err != nil {
				t.Fatal(err)
			}
			if got := status(t, c, leader, http.MethodGet, "/v1/auth/whoami", "ops-token", ""); got != http.StatusUnauthorized {
				t.Fatalf("the leader still takes the old token: %d", got)
			}
			if got := status(t, c, lag, http.MethodGet, "/v1/auth/whoami", "ops-token", ""); got != http.StatusOK {
				t.Fatalf("n%d, held back, refuses the old token already (%d): it does not lag, the test shows nothing", lag+1, got)
			}
			if got := createAs(t, c, lag, "ops-token", "after", 10*time.Second); got != http.StatusForbidden {
				t.Fatalf("the old token's write through the lagging n%d: %d, want 403", lag+1, got)
			}
			readsThroughTheLaggingNode(t, c, lag, "ops-token", "the old token")
			release()
			c.WaitConverged(30 * time.Second)
			for i := range 3 {
				rec, err := nodes.On(c.Node(i)).Get(context.Background(), "after", fsm.Stale)
				if !errors.Is(err, errs.NotFound) {
					t.Fatalf("n%d: %+v %v: the old token's write through a lagging node was applied", i+1, rec, err)
				}
			}
			if tc.after != "" {
				if got := createAs(t, c, lag, tc.after, "with-the-new-token", 10*time.Second); got != http.StatusOK {
					t.Fatalf("the new token through n%d once caught up: %d", lag+1, got)
				}
			}
		})
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

// The other way round: the leader lags behind the follower that took the
// request (its applies held back, as a leader just elected or replaying
// may be), so its registry does not yet hold a principal the follower
// authenticated. The leader does not refuse the forwarded write for it:
// it first applies what it knows to be committed, finds the principal,
// and proposes the write (200).
func TestALaggingLeaderLooksAgainBeforeItRefusesACredential(t *testing.T) {
	c, guards := authCluster(t, clustertest.Options{}, bootstrapFile(0))
	waitTable(t, c, guards)
	leader := c.Leader()
	follower := (leader + 1) % 3
	release := c.HoldApply(leader)
	defer release()
	added := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(as(superAdmin), 30*time.Second)
		defer cancel()
		// Through the leader: a follower forwards one batch at a time, and
		// this one is answered only once the leader applies it.
		_, err := access.NewService(c.Node(leader), c.Node(leader)).Put(ctx, access.PutRequest{ID: "p2", Tenants: []string{"*"},
			Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken("p2-token")}})
		added <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for status(t, c, follower, http.MethodGet, "/v1/auth/whoami", "p2-token", "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("n%d never took p2's token", follower+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := status(t, c, leader, http.MethodGet, "/v1/auth/whoami", "p2-token", ""); got != http.StatusUnauthorized {
		t.Fatalf("the held leader takes p2's token already (%d): it does not lag, the test shows nothing", got)
	}
	created := make(chan int, 1)
	go func() { created <- createAs(t, c, follower, "p2-token", "by-p2", 20*time.Second) }()
	// While the leader's applies are held the write cannot be answered
	// but by a refusal: wait long enough for one to come back.
	select {
	case got := <-created:
		t.Fatalf("p2's write through n%d answered %d while the leader lagged: it did not wait to apply what it knew committed", follower+1, got)
	case <-time.After(3 * time.Second):
	}
	release()
	if got := <-created; got != http.StatusOK {
		t.Fatalf("p2's write through n%d to a lagging leader: %d, want 200", follower+1, got)
	}
	if err := <-added; err != nil {
		t.Fatal(err)
	}
}
