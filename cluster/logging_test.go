package cluster_test

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A follower that is away makes the leader log each kind of failure
// about it once per interval, not once per retry, and count the rest in
// /metrics; raft's lines with hclog-formatted values read as values.
func TestLeaderLogsAnAbsentFollowerBoundedly(t *testing.T) {
	logs := make([]*syncBuffer, 3)
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		steadyTimings(i, cfg)
		logs[i] = &syncBuffer{}
		cfg.Logger = slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelInfo}))
	}})
	leader := c.WaitLeader(10 * time.Second)
	gone := (leader + 1) % 3
	peer := c.Node(gone).ID()
	c.Stop(gone)
	time.Sleep(3 * time.Second) // raft retries with backoff from 10 ms: dozens of attempts
	text := logs[leader].String()

	kinds := map[string]int{}
	line := regexp.MustCompile(`(?m)^.*level=(?:ERROR|WARN) msg="?([^"=]+?)"? .*\bpeer="?[^ ]*` + regexp.QuoteMeta(peer) + `.*$`)
	for _, m := range line.FindAllStringSubmatch(text, -1) {
		kinds[m[1]]++
	}
	if len(kinds) == 0 {
		t.Fatalf("the leader logged nothing about %s:\n%s", peer, text)
	}
	for msg, n := range kinds {
		if n > 1 {
			t.Errorf("%q about %s logged %d times in 3 s, want once", msg, peer, n)
		}
	}
	m := string(apiGet(t, apiBase(c, leader)+"/metrics").body)
	if v, ok := metricValue(m, "arbiter_log_lines_suppressed_total"); !ok || v < 1 {
		t.Errorf("arbiter_log_lines_suppressed_total = %v (present %v), want the held-back lines counted", v, ok)
	}
	for i, l := range logs {
		if s := l.String(); strings.Contains(s, "%+v") || strings.Contains(s, "%#v") {
			t.Errorf("node %d logged a format instead of a value: %s", i, regexp.MustCompile(`.*%[+#]v.*`).FindString(s))
		}
	}
	if !regexp.MustCompile(`msg="initial configuration" .*servers=\[`).MatchString(logs[leader].String()) {
		t.Errorf("the leader did not log its configuration as a value:\n%s", logs[leader].String())
	}
}
