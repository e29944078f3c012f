package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/arbiterhq/arbiter/internal/nodehooks"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/hashicorp/raft"
)

// Config configures a Node. Start from DefaultConfig.
type Config struct {
	// ID is this node's raft server id, unique in the cluster forever.
	ID string
	// DataDir holds the log and stable store (wal/ or raft.db, see
	// LogStore), member.json and snapshots/.
	DataDir string
	// RaftAddr is the host:port the raft transport listens on. Port 0 picks
	// a free port. RaftAdvertise, if set, is the address peers dial instead.
	RaftAddr      string
	RaftAdvertise string
	// HTTPAddr is the host:port of the HTTP API (port 0 picks a free port).
	// HTTPAdvertise, if set, is the host:port peers and clients use.
	HTTPAddr      string
	HTTPAdvertise string
	// MetricsAddr, if set, is the host:port of a listener that serves
	// only GET /metrics, without authentication or TLS (bind it where
	// only the scraper reaches, as etcd's --listen-metrics-urls); the API
	// then serves no /metrics. Unset, the API serves /metrics to any
	// authenticated caller (anyone in open development mode).
	MetricsAddr string

	// Bootstrap makes this node the first voter of a new cluster when its
	// data directory holds no raft state. Ignored once state exists. A
	// node without state needs Bootstrap, Join or AwaitJoin.
	Bootstrap bool
	// Join lists the API addresses of existing members, each a base URL
	// (http://host:port, https://host:port) or a bare host:port, which
	// takes https when this node has TLS and http otherwise; a node
	// without raft state asks them to add it (as a non-voter, which
	// the leader promotes once it has caught up). A node with state does
	// not join again, but checks that the members Join names belong to
	// its own cluster and refuses to start if they do not.
	Join []string
	// Replace, with Join, lets a node without state take the id of a
	// member that has other addresses, or whose data was lost: the leader
	// removes the old member and adds this node in its place as a
	// non-voter, promoted once it has caught up. The old process must be
	// gone for good. Without it such a join is refused (409).
	Replace bool
	// ChangeAddress lets a node with state start on a raft or API address
	// other than the ones its data directory records: it asks the leader
	// to move its membership there. Without it such a start is refused.
	ChangeAddress bool
	// AwaitJoin lets a node without state start with neither Bootstrap nor
	// Join, to be added by an admin's join through another member.
	// Without it such a start is refused (nothing in the data directory
	// changes).
	AwaitJoin bool
	// Restore, with Bootstrap, seeds the new cluster with the state of
	// this backup file (what `arbiter snapshot save` writes, online or
	// offline). A node with state refuses to start with it.
	Restore string
	// RestoreBumpIndex, with Restore, starts the new cluster's log index
	// this many entries past the backup's (fsm.RestoreOptions.BumpIndex):
	// at least as far as the log index of the cluster the backup came from
	// went past the backup's, so that no fence derived from the log index
	// is issued again.
	RestoreBumpIndex uint64

	// FlagNames maps field names to the names the user knows them by (the
	// CLI's flags), for the messages of Validate and Start.
	FlagNames map[string]string

	// Domains are the domains this node serves (builtin.Domains() for the
	// built-in ones): their modules run in its FSM, their routes in its
	// API. Members may serve different sets (a rolling upgrade): the
	// cluster enables a domain's commands only once every member serves
	// them (see fsm.Capabilities).
	Domains []domain.Domain
	// Mounts are further handlers the API serves, by pattern ("/mcp"):
	// each is built once with the API's own handler (which it may call in
	// process) and served behind the API's authentication, any
	// authenticated caller, with the principal on the request's context.
	Mounts map[string]func(api http.Handler) http.Handler

	// Principals turns authentication on: every call but health,
	// readiness and metrics needs a principal's bearer token or client
	// certificate. Without it the node runs in open development mode
	// (every caller trusted), which Validate allows only on loopback.
	Principals *identity.Registry
	// TLS serves raft and the API over TLS with node certificates; see
	// TLSConfig. Needed, with Principals, beyond loopback.
	TLS *TLSConfig
	// PeerToken, as an alternative to TLS on loopback (tests, single
	// hosts), is a shared secret nodes present to each other. Never
	// logged.
	PeerToken string

	Logger *slog.Logger

	// ApplyTimeout bounds a proposal or read whose context has no deadline.
	ApplyTimeout time.Duration
	// TickInterval is how often the leader proposes a Tick.
	TickInterval time.Duration
	// TickBudget bounds the rows one Tick may prune or expire.
	TickBudget int
	// IdempotencyRetention is how long idempotency ledger rows are kept,
	// and IdempotencyMaxRows how many at most: beyond it the oldest are
	// evicted early (counted in arbiter_ledger_evictions_total). A retry
	// is replayed for IdempotencyRetention or the last IdempotencyMaxRows
	// keyed writes, whichever is shorter (see fsm.Retention).
	// IdempotencyMaxBytes bounds the rows' size as well (a row holds its
	// write's whole result), once every voter serves version 3 of the
	// tick; evictions for it count in the same metric.
	IdempotencyRetention time.Duration
	IdempotencyMaxRows   uint64
	IdempotencyMaxBytes  uint64
	// ChangeFeedRetain is how many change-feed events are kept.
	ChangeFeedRetain uint64

	// Raft timing. A node that is the only voter of its cluster runs with
	// LeaderLeaseTimeout as its heartbeat and election timeouts until it
	// leads (it has nobody to wait for), then with these.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// MaxAppendEntries is also the largest group commit (and FSM batch).
	MaxAppendEntries int
	// RaftPipeline lets the leader pipeline AppendEntries to a follower
	// that is caught up (send the next before the answer to the last),
	// behind the transport guard's wrapper against hashicorp/raft's
	// pipeline wedge (cluster/transport/pipeline.go). Off, the leader
	// sends one AppendEntries at a time to each follower.
	RaftPipeline      bool
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	// TrailingLogs is the least number of log entries kept behind a
	// snapshot. A node keeps more while its write rate and state size
	// call for it, so that a follower installing a snapshot finds the log
	// after it (catchup.go), up to MaxTrailingLogs, which bounds the disk
	// the log takes.
	TrailingLogs    uint64
	MaxTrailingLogs uint64

	// NoSyncUnsafe turns off fsync of the raft log: a crash may lose
	// acknowledged writes. For benchmarks and tests only.
	NoSyncUnsafe bool
	// LogStore is the raft log store of a new data directory: "wal"
	// (hashicorp/raft-wal) or "bolt" (raft-boltdb); "" is the default
	// (logstore.Default). A data directory keeps the store it was created
	// with, whatever this says.
	LogStore string
	// WALSegmentBytes is the size of a raft-wal segment file (0: 64 MiB;
	// logstore.MinWALSegmentBytes to logstore.MaxWALSegmentBytes). Each segment is
	// preallocated when it is made, and the WAL drops compacted entries a
	// whole sealed segment at a time.
	WALSegmentBytes int

	// MaxRestoreBytes bounds a backup uploaded to POST
	// /v1/cluster/restore.
	MaxRestoreBytes int64

	// HTTP server limits.
	MaxConcurrentRequests int
	ReadHeaderTimeout     time.Duration
	ReadTimeout           time.Duration
	WriteTimeout          time.Duration
	IdleTimeout           time.Duration

	// Replaceable parts, for tests and hosts with their own plumbing.
	// Transport replaces the TCP raft transport (its local address is the
	// raft address). InitialServers replaces the one-voter bootstrap
	// configuration. PeerClient is used for requests to other nodes
	// (forwarding, join). Stores replaces the on-disk stores. (The test
	// switches no production node may set live in internal/nodehooks.)
	Transport      raft.Transport
	InitialServers []raft.Server
	PeerClient     *http.Client
	Stores         *Stores

	// hooks are the test switches of internal/nodehooks.
	hooks nodehooks.Hooks
}

// Stores lets tests supply raft stores; Close is called on shutdown.
type Stores struct {
	Log      raft.LogStore
	Stable   raft.StableStore
	Snapshot raft.SnapshotStore
	Close    func() error
}

// DefaultConfig returns settings for a LAN cluster: a single node on
// loopback with data in ./arbiter-data.
func DefaultConfig() Config {
	return Config{
		ID:                    "node1",
		DataDir:               "arbiter-data",
		RaftAddr:              "127.0.0.1:7000",
		HTTPAddr:              "127.0.0.1:8000",
		ApplyTimeout:          10 * time.Second,
		TickInterval:          time.Second,
		TickBudget:            128,
		IdempotencyRetention:  24 * time.Hour,
		IdempotencyMaxRows:    250_000,
		IdempotencyMaxBytes:   256 << 20,
		ChangeFeedRetain:      100_000,
		HeartbeatTimeout:      1000 * time.Millisecond,
		ElectionTimeout:       1000 * time.Millisecond,
		LeaderLeaseTimeout:    500 * time.Millisecond,
		CommitTimeout:         5 * time.Millisecond,
		MaxAppendEntries:      128,
		SnapshotInterval:      30 * time.Second,
		SnapshotThreshold:     8192,
		TrailingLogs:          10240,
		MaxTrailingLogs:       2_000_000,
		MaxRestoreBytes:       1 << 30,
		MaxConcurrentRequests: 1024,
		ReadHeaderTimeout:     5 * time.Second,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           2 * time.Minute,
	}
}

// Validate checks every field and their relations; it returns all problems
// found, joined. Fields are named as FlagNames says.
func (c *Config) Validate() error {
	var problems []error
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	nm := c.name
	if err := bounds.Identifier(nm("ID"), c.ID); err != nil {
		bad("%v", err)
	}
	if err := domain.Check(c.Domains); err != nil {
		bad("%v", err)
	}
	if c.DataDir == "" && c.Stores == nil {
		bad("%s is empty", nm("DataDir"))
	}
	switch c.LogStore {
	case "", logstore.WAL, logstore.Bolt:
	default:
		bad("LogStore %q: want %s or %s", c.LogStore, logstore.WAL, logstore.Bolt)
	}
	if c.WALSegmentBytes != 0 && (c.WALSegmentBytes < logstore.MinWALSegmentBytes || c.WALSegmentBytes > logstore.MaxWALSegmentBytes) {
		bad("%s %d: want 0 (64 MiB) or %d to %d bytes", nm("WALSegmentBytes"), c.WALSegmentBytes, logstore.MinWALSegmentBytes, logstore.MaxWALSegmentBytes)
	}
	if c.Transport == nil {
		checkHostPort(bad, nm("RaftAddr"), c.RaftAddr, false)
	}
	checkHostPort(bad, nm("RaftAdvertise"), c.RaftAdvertise, true)
	checkHostPort(bad, nm("HTTPAddr"), c.HTTPAddr, false)
	checkHostPort(bad, nm("HTTPAdvertise"), c.HTTPAdvertise, true)
	if c.Bootstrap && len(c.Join) > 0 {
		bad("%s and %s are exclusive: bootstrap the first node, join the others", nm("Bootstrap"), nm("Join"))
	}
	for _, j := range c.Join {
		if j == "" {
			bad("%s holds an empty URL", nm("Join"))
		}
	}
	if c.Replace && len(c.Join) == 0 {
		bad("%s needs %s: a replacement joins the cluster of the member it replaces", nm("Replace"), nm("Join"))
	}
	if c.Restore != "" && !c.Bootstrap {
		bad("%s seeds a new cluster: it needs %s", nm("Restore"), nm("Bootstrap"))
	}
	if c.RestoreBumpIndex > 0 && c.Restore == "" {
		bad("%s bumps the index of a restored backup: it needs %s", nm("RestoreBumpIndex"), nm("Restore"))
	}
	if c.RestoreBumpIndex > fsm.MaxBumpIndex {
		bad("%s must be at most %d", nm("RestoreBumpIndex"), uint64(fsm.MaxBumpIndex))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ApplyTimeout", c.ApplyTimeout}, {"TickInterval", c.TickInterval},
		{"HeartbeatTimeout", c.HeartbeatTimeout}, {"ElectionTimeout", c.ElectionTimeout},
		{"LeaderLeaseTimeout", c.LeaderLeaseTimeout}, {"CommitTimeout", c.CommitTimeout},
		{"SnapshotInterval", c.SnapshotInterval}, {"ReadHeaderTimeout", c.ReadHeaderTimeout},
		{"ReadTimeout", c.ReadTimeout}, {"WriteTimeout", c.WriteTimeout},
		{"IdleTimeout", c.IdleTimeout}, {"IdempotencyRetention", c.IdempotencyRetention},
	} {
		if d.v <= 0 {
			bad("%s must be positive", nm(d.name))
		}
	}
	if c.SnapshotInterval < 5*time.Millisecond {
		bad("%s must be at least 5ms (raft's minimum)", nm("SnapshotInterval"))
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		bad("%s (%v) must not exceed %s (%v)", nm("LeaderLeaseTimeout"), c.LeaderLeaseTimeout, nm("HeartbeatTimeout"), c.HeartbeatTimeout)
	}
	if c.IdempotencyRetention < time.Duration(fsm.MinIdemRetainMs)*time.Millisecond {
		bad("%s must be at least %dms", nm("IdempotencyRetention"), fsm.MinIdemRetainMs)
	}
	if c.IdempotencyMaxRows < fsm.MinLedgerRows || c.IdempotencyMaxRows > fsm.MaxLedgerRows {
		bad("%s must be between %d and %d", nm("IdempotencyMaxRows"), fsm.MinLedgerRows, fsm.MaxLedgerRows)
	}
	if c.IdempotencyMaxBytes < fsm.MinLedgerBytes || c.IdempotencyMaxBytes > fsm.MaxLedgerBytes {
		bad("%s must be between %d and %d", nm("IdempotencyMaxBytes"), uint64(fsm.MinLedgerBytes), uint64(fsm.MaxLedgerBytes))
	}
	if c.TickBudget < 1 || c.TickBudget > fsm.MaxTickBudget {
		bad("%s must be between 1 and %d", nm("TickBudget"), fsm.MaxTickBudget)
	}
	if c.ChangeFeedRetain < fsm.MinFeedRetain {
		bad("%s must be at least %d", nm("ChangeFeedRetain"), fsm.MinFeedRetain)
	}
	if c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024 {
		bad("%s must be between 1 and 1024", nm("MaxAppendEntries"))
	}
	if c.MaxTrailingLogs < c.TrailingLogs {
		bad("%s (%d) must be at least %s (%d)", nm("MaxTrailingLogs"), c.MaxTrailingLogs, nm("TrailingLogs"), c.TrailingLogs)
	}
	if c.SnapshotThreshold < 1 {
		bad("%s must be positive", nm("SnapshotThreshold"))
	}
	if c.MaxConcurrentRequests < 1 {
		bad("%s must be positive", nm("MaxConcurrentRequests"))
	}
	if c.MaxRestoreBytes < 1 {
		bad("%s must be positive", nm("MaxRestoreBytes"))
	}
	if c.TLS != nil {
		if err := c.TLS.Validate(); err != nil {
			bad("%v", err)
		}
	}
	if c.PeerToken != "" && len(c.PeerToken) < 16 {
		bad("%s must be at least 16 characters", nm("PeerToken"))
	}
	loopback := allLoopback(c.HTTPAddr, c.HTTPAdvertise)
	if c.Transport == nil { // a supplied transport is in-process or the caller's business
		loopback = loopback && allLoopback(c.RaftAddr, c.RaftAdvertise)
	}
	switch {
	case c.Principals == nil && !loopback:
		bad("without %s the node runs in open mode, which must listen on loopback only (%s, %s and their advertised forms)", nm("Principals"), nm("RaftAddr"), nm("HTTPAddr"))
	case c.Principals != nil && c.TLS == nil && !loopback:
		bad("with %s beyond loopback, TLS is required so that nodes authenticate each other", nm("Principals"))
	case c.Principals != nil && c.TLS == nil && c.PeerToken == "":
		bad("with %s, nodes need TLS or a %s to authenticate each other", nm("Principals"), nm("PeerToken"))
	}
	return errors.Join(problems...)
}

// name is how the user knows field: its FlagNames entry, else itself.
func (c *Config) name(field string) string {
	if n, ok := c.FlagNames[field]; ok {
		return n
	}
	return field
}

// allLoopback reports whether every non-empty address is on loopback.
func allLoopback(addrs ...string) bool {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return false
		}
		if host == "localhost" {
			continue
		}
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

func checkHostPort(bad func(string, ...any), field, v string, optional bool) {
	if v == "" {
		if !optional {
			bad("%s is empty", field)
		}
		return
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		bad("%s %q is not host:port: %v", field, v, err)
	}
}

func init() {
	nodehooks.Edit = func(cfg any, edit func(*nodehooks.Hooks)) { edit(&cfg.(*Config).hooks) }
}
