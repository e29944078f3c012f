package cluster_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := cluster.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	if cfg.NoSyncUnsafe {
		t.Error("DefaultConfig turns fsync off")
	}
	if cfg.LeaderLeaseTimeout > cfg.HeartbeatTimeout {
		t.Errorf("default lease %v exceeds the heartbeat timeout %v", cfg.LeaderLeaseTimeout, cfg.HeartbeatTimeout)
	}
}

// Each bad field is refused, by Validate and by New, with an error that
// names the field; New never panics.
func TestConfigValidateNamesEachBadField(t *testing.T) {
	cases := []struct {
		name  string
		field string // must appear in the error
		edit  func(*cluster.Config)
	}{
		{"empty ID", "ID", func(c *cluster.Config) { c.ID = "" }},
		{"ID with a control character", "ID", func(c *cluster.Config) { c.ID = "n\x01" }},
		{"ID with a newline", "ID", func(c *cluster.Config) { c.ID = "n\n1" }},
		{"ID with invalid UTF-8", "ID", func(c *cluster.Config) { c.ID = "n\xff" }},
		{"ID over 512 bytes", "ID", func(c *cluster.Config) { c.ID = strings.Repeat("n", 513) }},
		{"empty DataDir", "DataDir", func(c *cluster.Config) { c.DataDir = "" }},
		{"empty RaftAddr", "RaftAddr", func(c *cluster.Config) { c.RaftAddr = "" }},
		{"RaftAddr without a port", "RaftAddr", func(c *cluster.Config) { c.RaftAddr = "127.0.0.1" }},
		{"RaftAddr with too many colons", "RaftAddr", func(c *cluster.Config) { c.RaftAddr = "1:2:3" }},
		{"bad RaftAdvertise", "RaftAdvertise", func(c *cluster.Config) { c.RaftAdvertise = "nohost" }},
		{"empty HTTPAddr", "HTTPAddr", func(c *cluster.Config) { c.HTTPAddr = "" }},
		{"HTTPAddr that is a URL", "HTTPAddr", func(c *cluster.Config) { c.HTTPAddr = "http://127.0.0.1:8000/" }},
		{"bad HTTPAdvertise", "HTTPAdvertise", func(c *cluster.Config) { c.HTTPAdvertise = "localhost" }},
		{"Bootstrap and Join", "Bootstrap", func(c *cluster.Config) { c.Bootstrap, c.Join = true, []string{"http://127.0.0.1:8001"} }},
		{"empty Join URL", "Join", func(c *cluster.Config) { c.Join = []string{""} }},
		{"zero ApplyTimeout", "ApplyTimeout", func(c *cluster.Config) { c.ApplyTimeout = 0 }},
		{"negative TickInterval", "TickInterval", func(c *cluster.Config) { c.TickInterval = -time.Second }},
		{"zero HeartbeatTimeout", "HeartbeatTimeout", func(c *cluster.Config) { c.HeartbeatTimeout = 0 }},
		{"zero ElectionTimeout", "ElectionTimeout", func(c *cluster.Config) { c.ElectionTimeout = 0 }},
		{"zero LeaderLeaseTimeout", "LeaderLeaseTimeout", func(c *cluster.Config) { c.LeaderLeaseTimeout = 0 }},
		{"zero CommitTimeout", "CommitTimeout", func(c *cluster.Config) { c.CommitTimeout = 0 }},
		{"zero SnapshotInterval", "SnapshotInterval", func(c *cluster.Config) { c.SnapshotInterval = 0 }},
		{"zero ReadHeaderTimeout", "ReadHeaderTimeout", func(c *cluster.Config) { c.ReadHeaderTimeout = 0 }},
		{"zero ReadTimeout", "ReadTimeout", func(c *cluster.Config) { c.ReadTimeout = 0 }},
		{"zero WriteTimeout", "WriteTimeout", func(c *cluster.Config) { c.WriteTimeout = 0 }},
		{"zero IdleTimeout", "IdleTimeout", func(c *cluster.Config) { c.IdleTimeout = 0 }},
		{"zero IdempotencyRetention", "IdempotencyRetention", func(c *cluster.Config) { c.IdempotencyRetention = 0 }},
		{"IdempotencyRetention under the minimum", "IdempotencyRetention", func(c *cluster.Config) {
			c.IdempotencyRetention = time.Duration(fsm.MinIdemRetainMs-1) * time.Millisecond
		}},
		{"LeaderLeaseTimeout over HeartbeatTimeout", "LeaderLeaseTimeout", func(c *cluster.Config) {
			c.HeartbeatTimeout, c.LeaderLeaseTimeout = time.Second, time.Second+time.Millisecond
		}},
		{"TickBudget 0", "TickBudget", func(c *cluster.Config) { c.TickBudget = 0 }},
		{"TickBudget negative", "TickBudget", func(c *cluster.Config) { c.TickBudget = -1 }},
		{"TickBudget over the maximum", "TickBudget", func(c *cluster.Config) { c.TickBudget = fsm.MaxTickBudget + 1 }},
		{"ChangeFeedRetain under the minimum", "ChangeFeedRetain", func(c *cluster.Config) { c.ChangeFeedRetain = fsm.MinFeedRetain - 1 }},
		{"MaxAppendEntries 0", "MaxAppendEntries", func(c *cluster.Config) { c.MaxAppendEntries = 0 }},
		{"MaxAppendEntries over 1024", "MaxAppendEntries", func(c *cluster.Config) { c.MaxAppendEntries = 1025 }},
		{"SnapshotThreshold 0", "SnapshotThreshold", func(c *cluster.Config) { c.SnapshotThreshold = 0 }},
		{"MaxConcurrentRequests 0", "MaxConcurrentRequests", func(c *cluster.Config) { c.MaxConcurrentRequests = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cluster.DefaultConfig()
			cfg.DataDir = t.TempDir()
			tc.edit(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %s", tc.name)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Validate: %q does not name %s", err, tc.field)
			}
			n, err := newWithoutPanic(t, cfg)
			if err == nil || n != nil {
				t.Fatalf("New accepted %s: node %v, error %v", tc.name, n, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("New: %q does not name %s", err, tc.field)
			}
		})
	}
}

// Boundary values that are allowed.
func TestConfigValidateAcceptsBoundaries(t *testing.T) {
	cases := []struct {
		name string
		edit func(*cluster.Config)
	}{
		{"port 0", func(c *cluster.Config) { c.RaftAddr, c.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0" }},
		{"IPv6 addresses", func(c *cluster.Config) { c.RaftAddr, c.HTTPAddr = "[::1]:7000", "[::1]:8000" }},
		{"advertised addresses", func(c *cluster.Config) { c.RaftAdvertise, c.HTTPAdvertise = "127.0.0.2:7000", "localhost:8000" }},
		{"join without bootstrap", func(c *cluster.Config) { c.Join = []string{"http://127.0.0.1:8001", "127.0.0.1:8002"} }},
		{"lease equal to the heartbeat timeout", func(c *cluster.Config) { c.LeaderLeaseTimeout = c.HeartbeatTimeout }},
		{"TickBudget 1", func(c *cluster.Config) { c.TickBudget = 1 }},
		{"TickBudget at the maximum", func(c *cluster.Config) { c.TickBudget = fsm.MaxTickBudget }},
		{"ChangeFeedRetain at the minimum", func(c *cluster.Config) { c.ChangeFeedRetain = fsm.MinFeedRetain }},
		{"MaxAppendEntries 1024", func(c *cluster.Config) { c.MaxAppendEntries = 1024 }},
		{"IdempotencyRetention at the minimum", func(c *cluster.Config) {
			c.IdempotencyRetention = time.Duration(fsm.MinIdemRetainMs) * time.Millisecond
		}},
		{"stores instead of a DataDir", func(c *cluster.Config) {
			c.DataDir = ""
			c.Stores = &cluster.Stores{}
		}},
		{"transport instead of a RaftAddr", func(c *cluster.Config) {
			c.RaftAddr = ""
			_, c.Transport = raft.NewInmemTransport("")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cluster.DefaultConfig()
			tc.edit(&cfg)
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate refused %s: %v", tc.name, err)
			}
		})
	}
}

// Validate reports every problem, not only the first.
func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cfg := cluster.DefaultConfig()
	cfg.ID, cfg.DataDir, cfg.TickBudget, cfg.HTTPAddr = "", "", 0, "nope"
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted four bad fields")
	}
	for _, field := range []string{"ID", "DataDir", "TickBudget", "HTTPAddr"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("%q does not name %s", err, field)
		}
	}
}

// A zero Config is refused with an error, not a panic.
func TestNewWithZeroConfigFails(t *testing.T) {
	n, err := newWithoutPanic(t, cluster.Config{})
	if err == nil || n != nil {
		t.Fatalf("New(Config{}) = %v, %v; want an error", n, err)
	}
	for _, field := range []string{"ID", "DataDir", "RaftAddr", "HTTPAddr", "ApplyTimeout", "TickBudget"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("%q does not name %s", err, field)
		}
	}
}

func newWithoutPanic(t *testing.T, cfg cluster.Config) (n *cluster.Node, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("cluster.New panicked: %v", r)
		}
	}()
	return cluster.New(cfg)
}

// Routes whose wildcards net/http's ServeMux finds in conflict are a
// configuration error of New, not a panic.
func TestNewRefusesConflictingRoutes(t *testing.T) {
	h := http.NotFoundHandler()
	conflicting := domain.Domain{Name: "conflicting", Routes: func(domain.Host) []domain.Route {
		return []domain.Route{
			{Method: http.MethodGet, Path: "/v1/conflicting/{a}/x", Access: domain.Authenticated, Handler: h},
			{Method: http.MethodGet, Path: "/v1/conflicting/x/{b}", Access: domain.Authenticated, Handler: h},
		}
	}}
	cfg := cluster.DefaultConfig()
	cfg.ID, cfg.DataDir, cfg.RaftAddr, cfg.HTTPAddr = "n1", t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	cfg.Domains = append(builtin.Domains(), conflicting)
	n, err := newWithoutPanic(t, cfg)
	if err == nil || n != nil || !strings.Contains(err.Error(), "conflicting") {
		t.Fatalf("New with conflicting routes = %v, %v; want an error naming the domain", n, err)
	}
}
