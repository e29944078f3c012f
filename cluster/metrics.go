package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are per node (a process may run several nodes), on their own
// registry served at /metrics.
type metrics struct {
	registry      *prometheus.Registry
	applyLatency  prometheus.Histogram
	readLatency   prometheus.Histogram
	leaderChanges prometheus.Counter
	forwarded     prometheus.Counter
	forwardedRead prometheus.Counter
	httpRequests  *prometheus.CounterVec
}

func newMetrics(n *Node) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		applyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_apply_duration_seconds",
			Help:    "Time from raft.Apply on the leader to the FSM's result.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		readLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_linearizable_read_wait_seconds",
			Help:    "Time the leader spent confirming leadership and catching up before a linearizable read.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_leader_changes_total",
			Help: "Times this node gained or lost leadership.",
		}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_forwarded_proposals_total",
			Help: "Proposals this node forwarded to the leader.",
		}),
		forwardedRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_forwarded_reads_total",
			Help: "Linearizable reads this node forwarded to the leader.",
		}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_http_requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	m.registry.MustRegister(
		m.applyLatency, m.readLatency, m.leaderChanges, m.forwarded, m.forwardedRead, m.httpRequests,
		gauge("arbiter_commit_index", "Raft commit index.", func() float64 { return float64(n.raft.CommitIndex()) }),
		gauge("arbiter_applied_index", "Index of the last entry the FSM applied.", func() float64 { return float64(n.fsm.AppliedIndex()) }),
		gauge("arbiter_is_leader", "1 if this node is the leader.", func() float64 {
			if n.IsLeader() {
				return 1
			}
			return 0
		}),
		gauge("arbiter_fsm_handler_panics", "Handler panics turned into internal errors (a bug if not 0).", func() float64 { return float64(n.fsm.Panics()) }),
		gauge("arbiter_fsm_halted", "1 if this replica met an enabled command its binary cannot apply and stopped applying.", func() float64 {
			if n.fsm.Halted() != nil {
				return 1
			}
			return 0
		}),
		counter("arbiter_fsm_effects_total", "Effects after commit that ran.", func() float64 { return float64(n.fsm.EffectRuns()) }),
		counter("arbiter_fsm_effect_failures_total", "Effects after commit that failed (logged with their error).", func() float64 { return float64(n.fsm.EffectFailures()) }),
		gauge("arbiter_ledger_rows", "Rows in the idempotency ledger.", func() float64 { return float64(n.fsm.RetentionStats().LedgerRows) }),
		counter("arbiter_ledger_evictions_total", "Ledger rows evicted by the row cap before their retention ran out.", func() float64 {
			return float64(n.fsm.RetentionStats().LedgerEvicted)
		}),
		gauge("arbiter_ledger_oldest_age_seconds", "FSM time since the oldest ledger row was written (above the retention: a pruning backlog).", func() float64 {
			if s := n.fsm.RetentionStats(); s.LedgerOldestMs != 0 {
				return float64(s.FSMNow-s.LedgerOldestMs) / 1000
			}
			return 0
		}),
		gauge("arbiter_feed_rows", "Events in the change feed.", func() float64 { return float64(n.fsm.RetentionStats().FeedRows) }),
		gauge("arbiter_feed_backlog_rows", "Change-feed events beyond its retention, not yet pruned.", func() float64 {
			if s := n.fsm.RetentionStats(); s.FeedRetain > 0 && s.FeedRows > s.FeedRetain {
				return float64(s.FeedRows - s.FeedRetain)
			}
			return 0
		}),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
