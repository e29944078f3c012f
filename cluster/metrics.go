package cluster

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are per node (a process may run several nodes), on their own
// registry served at /metrics. Every node exports every series it can
// measure itself, followers included; the per-peer series only the
// leader can see (it is the one that replicates) come from its own RPCs.
// docs/grafana/arbiter.json is a dashboard of them.
type metrics struct {
	registry        *prometheus.Registry
	applyLatency    prometheus.Histogram
	fsmApply        prometheus.Histogram
	appliedEntries  prometheus.Counter
	readLatency     prometheus.Histogram
	leaderChanges   prometheus.Counter
	forwarded       prometheus.Counter
	forwardedRead   prometheus.Counter
	httpRequests    *prometheus.CounterVec
	httpDuration    *prometheus.HistogramVec
	snapshotPersist prometheus.Histogram
	snapshotRestore prometheus.Histogram
	snapshotFailed  prometheus.Counter
	// commandDuration is the time of Node.Propose by domain, command and
	// outcome: the labels are closed sets (the commands this binary
	// registers, the error codes), so the series are bounded.
	commandDuration *prometheus.HistogramVec
}

func newMetrics(n *Node) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		applyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_apply_duration_seconds",
			Help:    "Time from raft.Apply on the leader to the FSM's result: the commit latency of this node's own proposals (leader only).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		fsmApply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_fsm_apply_batch_duration_seconds",
			Help:    "Time this node's FSM took to apply one batch of committed entries (every node).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		appliedEntries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_fsm_applied_entries_total",
			Help: "Log entries this node's FSM applied.",
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
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "arbiter_http_request_duration_seconds",
			Help:    "HTTP request latency by route (the pattern, \"unknown\" for no route) and status code; long polls included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"route", "code"}),
		commandDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "arbiter_command_duration_seconds",
			Help:    "Time of the commands callers asked this node for (embedded calls and its API; a follower counts those it forwards to the leader), from the call to its answer, by domain, command and outcome (ok, an error code, or outcome_unknown).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"domain", "command", "outcome"}),
		snapshotPersist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_snapshot_persist_duration_seconds",
			Help:    "Time this node took to write a raft snapshot of its state.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		snapshotRestore: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_snapshot_restore_duration_seconds",
			Help:    "Time this node took to load a snapshot (at start, from the leader, or a backup restore).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		snapshotFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_snapshot_failures_total",
			Help: "Raft snapshots this node failed to write.",
		}),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	m.registry.MustRegister(
		m.applyLatency, m.fsmApply, m.appliedEntries, m.readLatency, m.leaderChanges, m.forwarded, m.forwardedRead,
		m.httpRequests, m.httpDuration, m.snapshotPersist, m.snapshotRestore, m.snapshotFailed,
		m.commandDuration, commandCollector{n}, domainGauges{n},
		gauge("arbiter_commit_index", "Raft commit index.", func() float64 { return float64(n.raftOr(0, (*raft.Raft).CommitIndex)) }),
		gauge("arbiter_applied_index", "Index of the last entry the FSM applied.", func() float64 { return float64(n.fsm.AppliedIndex()) }),
		gauge("arbiter_raft_last_index", "Index of the last entry in this node's log.", func() float64 { return float64(n.raftOr(0, (*raft.Raft).LastIndex)) }),
		// Read from the store at each scrape (a directory listing and the
		// meta files of the few snapshots raft retains), not kept when this
		// node writes one: a snapshot also arrives by an install from the
		// leader, a restore or `recover`, and is there at a restart.
		gauge("arbiter_snapshot_last_size_bytes", "Size of the newest raft snapshot in this node's store (written here, installed from the leader, restored from a backup, or found at start); 0 for none.", func() float64 {
			return float64(n.host.newestSnapshotBytes())
		}),
		gauge("arbiter_raft_term", "Raft term this node is in.", func() float64 { return float64(n.raftOr(0, (*raft.Raft).CurrentTerm)) }),
		gauge("arbiter_is_leader", "1 if this node is the leader.", func() float64 {
			if n.isLeader() {
				return 1
			}
			return 0
		}),
		gauge("arbiter_raft_last_contact_seconds", "Seconds since this follower last heard from a leader (0 on the leader; -1 if it never did).", func() float64 {
			if n.raft == nil || n.isLeader() {
				return 0
			}
			if at := n.raft.LastContact(); !at.IsZero() {
				return time.Since(at).Seconds()
			}
			return -1
		}),
		counter("arbiter_fsm_handler_panics_total", "Handler panics turned into internal errors (a bug if not 0).", func() float64 { return float64(n.fsm.Panics()) }),
		gauge("arbiter_fsm_halted", "1 if this replica met an enabled command its binary cannot apply and stopped applying.", func() float64 {
			if n.fsm.Halted() != nil {
				return 1
			}
			return 0
		}),
		counter("arbiter_raft_applied_truncations_total", "Times raft truncated log entries this node had already applied: its state may differ from the cluster's (a bug if not 0; logged).", func() float64 {
			return float64(n.Truncations())
		}),
		counter("arbiter_fsm_effects_total", "Effects after commit that ran.", func() float64 { return float64(n.fsm.EffectRuns()) }),
		counter("arbiter_fsm_effect_failures_total", "Effects after commit that failed (logged with their error).", func() float64 { return float64(n.fsm.EffectFailures()) }),
		counter("arbiter_fsm_effect_retries_total", "Retries of failed keyed effects (a projection file this node could not write), which the node runs on its own with backoff.", func() float64 {
			return float64(n.fsm.EffectRetries())
		}),
		counter("arbiter_fsm_effect_retry_failures_total", "Retries of failed keyed effects that failed again.", func() float64 { return float64(n.fsm.EffectRetryFailures()) }),
		gauge("arbiter_fsm_effects_failing", "Keyed effects that failed on this node and have not succeeded since (being retried).", func() float64 {
			c, _ := n.fsm.FailingEffectsReport()
			return float64(c)
		}),
		gauge("arbiter_ledger_rows", "Rows in the idempotency ledger.", func() float64 { return float64(n.fsm.RetentionStats().LedgerRows) }),
		gauge("arbiter_ledger_bytes", "Size of the idempotency ledger's rows, as its byte cap counts them (0 until every voter serves the cap).", func() float64 { return float64(n.fsm.RetentionStats().LedgerBytes) }),
		counter("arbiter_ledger_evictions_total", "Ledger rows evicted by the row or byte cap before their retention ran out.", func() float64 {
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
		counter("arbiter_log_lines_suppressed_total", "Repeated warning and error lines not logged (the next line of the kind that is says suppressed=N).", func() float64 {
			return float64(n.logLimit.Suppressed())
		}),
		raftCollector{n},
		buildInfo(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// snapshotPersisted records one snapshot write (its size is read from
// the store: arbiter_snapshot_last_size_bytes).
func (m *metrics) snapshotPersisted(d time.Duration, err error) {
	if err != nil {
		m.snapshotFailed.Inc()
		return
	}
	m.snapshotPersist.Observe(d.Seconds())
}

// commandCollector exports the FSM's applied-command counts.
type commandCollector struct{ n *Node }

var commandsDesc = prometheus.NewDesc("arbiter_commands_total",
	"Commands this replica applied since it started, by domain, command and outcome (ok, or the refusal's error code); every replica counts every command.",
	[]string{"domain", "command", "outcome"}, nil)

func (c commandCollector) Describe(ch chan<- *prometheus.Desc) { ch <- commandsDesc }

func (c commandCollector) Collect(ch chan<- prometheus.Metric) {
	for _, a := range c.n.fsm.CommandCounts() {
		ch <- prometheus.MustNewConstMetric(commandsDesc, prometheus.CounterValue, float64(a.Count), a.Module, a.Command, a.Outcome)
	}
}

// observeCommand records one Node.Propose of a command of type t.
func (m *metrics) observeCommand(f *fsm.FSM, t arblog.Type, took time.Duration, res *fsm.Response, err error) {
	domain, name := f.CommandName(t)
	if name == "" {
		domain, name = "", "unknown"
	}
	outcome := "ok"
	if err == nil && res != nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		outcome = string(errs.CodeOf(err))
		if !errs.Known(errs.Code(outcome)) {
			outcome = string(errs.CodeInternal)
		}
		if errs.IsOutcomeUnknown(err) {
			outcome = "outcome_unknown"
		}
	}
	m.commandDuration.WithLabelValues(domain, name, outcome).Observe(took.Seconds())
}

// raftOr is f of the node's raft, or zero before Start.
func (n *Node) raftOr(zero uint64, f func(*raft.Raft) uint64) uint64 {
	if n.raft == nil {
		return zero
	}
	return f(n.raft)
}

// raftCollector exports the raft state as a labelled gauge and, on the
// leader, each follower's replication: seconds since it last answered,
// entries it is behind, RPCs to it that failed.
type raftCollector struct{ n *Node }

var (
	raftStateDesc = prometheus.NewDesc("arbiter_raft_state",
		"1 for the raft state this node is in (follower, candidate, leader, shutdown), 0 for the others.", []string{"state"}, nil)
	peerContactDesc = prometheus.NewDesc("arbiter_raft_peer_last_contact_seconds",
		"Leader only: seconds since the peer last answered an AppendEntries (heartbeats included) or InstallSnapshot in this term; -1 if it has not.", []string{"peer"}, nil)
	peerLagDesc = prometheus.NewDesc("arbiter_raft_peer_lag_entries",
		"Leader only: entries the peer's log is behind the leader's, as of its last answer in this term.", []string{"peer"}, nil)
	trailingLogsDesc = prometheus.NewDesc("arbiter_raft_trailing_logs",
		"Log entries kept behind the newest snapshot now: --trailing-logs, or more while the write rate and the state's size call for it (up to --max-trailing-logs).", nil, nil)
	peerFailuresDesc = prometheus.NewDesc("arbiter_raft_peer_rpc_failures_total",
		"Leader only: AppendEntries and InstallSnapshot RPCs to the peer that got no answer, since this node started.", []string{"peer"}, nil)
)

func (c raftCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- raftStateDesc
	ch <- peerContactDesc
	ch <- peerLagDesc
	ch <- peerFailuresDesc
	ch <- trailingLogsDesc
}

func (c raftCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.n.raft
	if r == nil {
		return
	}
	state := r.State()
	for _, s := range []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown} {
		v := 0.0
		if s == state {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(raftStateDesc, prometheus.GaugeValue, v, stateLabel(s))
	}
	ch <- prometheus.MustNewConstMetric(trailingLogsDesc, prometheus.GaugeValue, float64(c.n.TrailingLogs()))
	if state != raft.Leader || c.n.host.guard == nil {
		return
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return
	}
	var ids []raft.ServerID
	for _, s := range f.Configuration().Servers {
		if s.ID != raft.ServerID(c.n.cfg.ID) {
			ids = append(ids, s.ID)
		}
	}
	for _, p := range c.n.host.guard.Peers(ids, r.CurrentTerm(), r.LastIndex()) {
		contact := -1.0
		if p.Known {
			contact = p.SinceAnswer.Seconds()
			ch <- prometheus.MustNewConstMetric(peerLagDesc, prometheus.GaugeValue, float64(p.Lag), p.ID)
		}
		ch <- prometheus.MustNewConstMetric(peerContactDesc, prometheus.GaugeValue, contact, p.ID)
		ch <- prometheus.MustNewConstMetric(peerFailuresDesc, prometheus.CounterValue, float64(p.Failures), p.ID)
	}
}

func stateLabel(s raft.RaftState) string {
	switch s {
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	case raft.Leader:
		return "leader"
	}
	return "shutdown"
}

// buildInfo is arbiter_build_info: the module version and VCS revision the
// binary was built from, and its Go version.
func buildInfo() prometheus.Collector {
	version, revision, modified := "(unknown)", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "arbiter_build_info",
		Help: "1, labelled with the version and VCS revision this binary was built from and its Go version.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "modified": modified, "go_version": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}
