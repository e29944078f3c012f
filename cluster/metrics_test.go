package cluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// sample finds the value of one series (name with its labels, exactly as
// written, e.g. `arbiter_raft_state{state="leader"}`).
func sample(text, series string) (float64, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// metricNames lists the metric names of a Prometheus text exposition.
func metricNames(text string) map[string]bool {
	out := map[string]bool{}
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		out[name] = true
	}
	return out
}

// followerMetrics are the series every node exports about itself.
var followerMetrics = []string{
	"arbiter_raft_state", "arbiter_raft_term", "arbiter_raft_last_index", "arbiter_commit_index", "arbiter_applied_index",
	"arbiter_raft_last_contact_seconds", "arbiter_is_leader", "arbiter_leader_changes_total",
	"arbiter_fsm_apply_batch_duration_seconds_bucket", "arbiter_fsm_applied_entries_total",
	"arbiter_snapshot_persist_duration_seconds_count", "arbiter_snapshot_restore_duration_seconds_count",
	"arbiter_snapshot_last_size_bytes", "arbiter_snapshot_failures_total",
	"arbiter_http_requests_total", "arbiter_http_request_duration_seconds_bucket",
	"arbiter_ledger_rows", "arbiter_ledger_bytes", "arbiter_feed_rows", "arbiter_log_lines_suppressed_total", "arbiter_build_info",
	// What the domains count of their state (fsm.Module Gauges).
	"arbiter_workitems", "arbiter_workitems_claimable", "arbiter_host_reservations", "arbiter_capacity_leases",
	"arbiter_allocation_tasks", "arbiter_allocation_spaces", "arbiter_projection_leases",
	"go_goroutines", "go_gc_duration_seconds", "go_memstats_heap_inuse_bytes",
	"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
}

// A follower's /metrics describes the follower itself: raft state, term,
// indexes, contact with the leader, its own apply and snapshot times and
// sizes, HTTP latency by route and code, the Go runtime, the process and
// the build; the leader's adds each peer's last contact and lag. Every
// series the Grafana dashboard in the repository queries is among them.
func TestMetricsOnFollowersAndLeader(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: steadyTimings})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	fb := apiBase(c, follower)
	for i := range 5 {
		mustCreate(t, fb, map[string]any{"node_id": fmt.Sprintf("m-%d", i)})
	}
	apiGet(t, fb+"/healthz")
	apiGet(t, fb+"/v1/nope")
	// A snapshot on the follower, so that its size and time are measured.
	if err := c.Node(follower).Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}

	var ftext, ltext string
	ok := c.Eventually(10*time.Second, func() bool {
		ftext = string(apiGet(t, fb+"/metrics").body)
		ltext = string(apiGet(t, apiBase(c, leader)+"/metrics").body)
		// The leader's commit index: a follower learns of the last
		// commit only with the next append, so its own may lag.
		commit, _ := sample(ltext, "arbiter_commit_index")
		applied, _ := sample(ftext, "arbiter_applied_index")
		return applied >= commit && commit > 0
	})
	if !ok {
		t.Fatalf("the follower did not catch up:\n%s", ftext)
	}
	names := metricNames(ftext)
	for _, want := range followerMetrics {
		if !names[want] {
			t.Errorf("the follower's /metrics lacks %s", want)
		}
	}
	// Counters of applied commands follow the FSM, which raft's applied
	// index may run ahead of: the series are polled until they hold.
	followerSeries := map[string]func(float64) bool{
		`arbiter_raft_state{state="follower"}`:                                         func(v float64) bool { return v == 1 },
		`arbiter_raft_state{state="leader"}`:                                           func(v float64) bool { return v == 0 },
		"arbiter_is_leader":                                                            func(v float64) bool { return v == 0 },
		"arbiter_raft_term":                                                            func(v float64) bool { return v >= 1 },
		"arbiter_raft_last_contact_seconds":                                            func(v float64) bool { return v >= 0 && v < 5 },
		"arbiter_fsm_applied_entries_total":                                            func(v float64) bool { return v >= 5 },
		"arbiter_fsm_apply_batch_duration_seconds_count":                               func(v float64) bool { return v >= 1 },
		"arbiter_snapshot_persist_duration_seconds_count":                              func(v float64) bool { return v >= 1 },
		"arbiter_snapshot_last_size_bytes":                                             func(v float64) bool { return v > 100 },
		`arbiter_http_requests_total{code="404",route="unknown"}`:                      func(v float64) bool { return v >= 1 },
		`arbiter_http_request_duration_seconds_count{code="200",route="GET /healthz"}`: func(v float64) bool { return v >= 1 },
		// The five creates entered here: counted as applied by every
		// replica, and timed where they were asked for.
		`arbiter_commands_total{command="node_create",domain="nodes",outcome="ok"}`: func(v float64) bool { return v >= 5 },
		// Domain gauges, with their closed label sets; nothing of theirs
		// was written here.
		`arbiter_workitems{domain="workitem",status="pending"}`:                                     func(v float64) bool { return v == 0 },
		`arbiter_capacity_leases{domain="capacity",status="held"}`:                                  func(v float64) bool { return v == 0 },
		`arbiter_allocation_tasks{domain="allocation",status="open"}`:                               func(v float64) bool { return v == 0 },
		`arbiter_projection_leases{domain="projection",status="lapsed"}`:                            func(v float64) bool { return v == 0 },
		`arbiter_command_duration_seconds_count{command="node_create",domain="nodes",outcome="ok"}`: func(v float64) bool { return v >= 5 },
	}
	var bad []string
	c.Eventually(10*time.Second, func() bool {
		ftext = string(apiGet(t, fb+"/metrics").body)
		bad = bad[:0]
		for series, want := range followerSeries {
			if v, ok := sample(ftext, series); !ok || !want(v) {
				bad = append(bad, fmt.Sprintf("%s = %v (present %v)", series, v, ok))
			}
		}
		return len(bad) == 0
	})
	for _, b := range bad {
		t.Errorf("follower: %s", b)
	}
	if !regexp.MustCompile(`arbiter_build_info\{go_version="go[^"]+",modified="[^"]*",revision="[^"]*",version="[^"]+"\} 1`).MatchString(ftext) {
		t.Errorf("build info: %s", regexp.MustCompile(`arbiter_build_info.*`).FindString(ftext))
	}
	if strings.Contains(ftext, "arbiter_raft_peer_") {
		t.Errorf("a follower exports per-peer series")
	}

	// The leader sees both followers, close behind and heard from lately.
	for _, i := range []int{(leader + 1) % 3, (leader + 2) % 3} {
		peer := c.Node(i).ID()
		ok := c.Eventually(5*time.Second, func() bool {
			ltext = string(apiGet(t, apiBase(c, leader)+"/metrics").body)
			contact, ok1 := sample(ltext, `arbiter_raft_peer_last_contact_seconds{peer="`+peer+`"}`)
			lag, ok2 := sample(ltext, `arbiter_raft_peer_lag_entries{peer="`+peer+`"}`)
			_, ok3 := sample(ltext, `arbiter_raft_peer_rpc_failures_total{peer="`+peer+`"}`)
			return ok1 && ok2 && ok3 && contact >= 0 && contact < 2 && lag < 5
		})
		if !ok {
			t.Errorf("the leader's view of %s:\n%s", peer, regexp.MustCompile(`(?m)^arbiter_raft_peer.*$`).FindAllString(ltext, -1))
		}
	}
	if v, _ := sample(ltext, `arbiter_raft_state{state="leader"}`); v != 1 {
		t.Errorf("leader state %v", v)
	}

	// The dashboard queries only series the nodes export.
	raw, err := os.ReadFile("../docs/grafana/arbiter.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	exported := metricNames(ftext + "\n" + ltext)
	metric := regexp.MustCompile(`\b(?:arbiter|go|process)_[a-z0-9_]+`)
	var used []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range metric.FindAllString(tg.Expr, -1) {
				if !exported[name] {
					t.Errorf("dashboard panel %q queries %s, which no node exports", p.Title, name)
				}
				used = append(used, name)
			}
		}
	}
	slices.Sort(used)
	for _, want := range []string{"arbiter_raft_peer_lag_entries", "arbiter_raft_peer_last_contact_seconds", "arbiter_http_request_duration_seconds_bucket",
		"arbiter_fsm_apply_batch_duration_seconds_bucket", "arbiter_snapshot_last_size_bytes", "process_cpu_seconds_total", "arbiter_build_info",
		"arbiter_workitems", "arbiter_host_reservations", "arbiter_capacity_leases", "arbiter_allocation_tasks", "arbiter_projection_leases"} {
		if _, found := slices.BinarySearch(used, want); !found {
			t.Errorf("the dashboard does not use %s", want)
		}
	}

	// A follower that goes away falls behind, and silent, in the
	// leader's view, and the RPCs to it fail.
	gone := (leader + 2) % 3
	peer := c.Node(gone).ID()
	c.Stop(gone)
	for i := range 5 {
		mustCreate(t, fb, map[string]any{"node_id": fmt.Sprintf("m-away-%d", i)})
	}
	var contact, lag, failures float64
	ok = c.Eventually(10*time.Second, func() bool {
		ltext = string(apiGet(t, apiBase(c, leader)+"/metrics").body)
		contact, _ = sample(ltext, `arbiter_raft_peer_last_contact_seconds{peer="`+peer+`"}`)
		lag, _ = sample(ltext, `arbiter_raft_peer_lag_entries{peer="`+peer+`"}`)
		failures, _ = sample(ltext, `arbiter_raft_peer_rpc_failures_total{peer="`+peer+`"}`)
		return contact > 1 && lag >= 5 && failures > 0
	})
	if !ok {
		t.Errorf("the leader's view of %s, stopped: contact %v s, lag %v, failures %v", peer, contact, lag, failures)
	}
}
