package cluster_test

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// Every series the Grafana dashboard draws exists on a running cluster
// (issue 37): a renamed or removed metric fails here, not on an
// operator's empty panel. The series of a leader and of a follower are
// taken together, after writes through the follower.
func TestDashboardSeriesExist(t *testing.T) {
	raw, err := os.ReadFile("../docs/grafana/arbiter.json")
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string]bool{}
	for _, m := range regexp.MustCompile(`\barbiter_[a-z0-9_]+`).FindAllString(string(raw), -1) {
		drawn[m] = true
	}
	if !drawn["arbiter_raft_applied_truncations_total"] {
		t.Error("the dashboard does not draw arbiter_raft_applied_truncations_total, the series RELIABILITY.md calls a bug if not 0")
	}
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: steadyTimings})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	for i := range 3 {
		mustCreate(t, apiBase(c, follower), map[string]any{"node_id": fmt.Sprintf("d-%d", i)})
	}
	apiGet(t, apiBase(c, follower)+"/v1/nodes/d-0") // a linearizable read, forwarded
	if err := c.Node(follower).Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, i := range []int{leader, follower} {
		for name := range metricNames(string(apiGet(t, apiBase(c, i)+"/metrics").body)) {
			exported[name] = true
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[strings.TrimSuffix(name, suffix)] = true
			}
		}
	}
	for name := range drawn {
		if !exported[name] {
			t.Errorf("the dashboard draws %s, which no node exports", name)
		}
	}
}

// With MetricsAddr, /metrics is served on its own listener, without a
// credential, and the API serves none; without it, the API serves
// /metrics to authenticated callers (TestIsolationMatrix pins that).
func TestMetricsOnItsOwnListener(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(i int, cfg *cluster.Config) {
		cfg.MetricsAddr = "127.0.0.1:0"
	}})
	c.WaitLeader(10 * time.Second)
	n := c.Node(0)
	if n.MetricsAddr() == "" {
		t.Fatal("no metrics listener")
	}
	res, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("metrics listener: %d", res.StatusCode)
	}
	if r := apiGet(t, apiBase(c, 0)+"/metrics"); r.status != http.StatusNotFound {
		t.Errorf("the API still serves /metrics: %d", r.status)
	}
	res, err = http.Get("http://" + n.MetricsAddr() + "/v1/cluster/status")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("the metrics listener serves the API: %d", res.StatusCode)
	}
}
