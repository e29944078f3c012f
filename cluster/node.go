package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/hashicorp/raft"
)

// Node is one member of an Arbiter cluster. It implements fsm.Proposer and
// fsm.Reader.
type Node struct {
	cfg       Config
	logger    *slog.Logger
	logLimit  *logLimiter // repeated warnings and errors (logging.go)
	fsm       *fsm.FSM
	metrics   *metrics
	peers     *http.Client
	forwarder *forwarder
	// principals is nil in open mode; SetPrincipals replaces it.
	principals atomic.Pointer[identity.Registry]

	// Set by Start.
	raft           *raft.Raft
	transport      raft.Transport
	closeTransport func() error
	guard          *transportGuard  // raft's view of transport
	truncations    *truncationWatch // raft's view of the log store
	stores         *Stores
	mux            *http.ServeMux // the API: the host's routes and every domain's
	routeTable     []RouteInfo
	httpSrv        *http.Server
	metricsSrv     *http.Server // Config.MetricsAddr's, or nil
	metricsLn      net.Listener
	raftAddr       string // advertised raft address
	logStore       string // the log store of the data directory (logstore.WAL, logstore.Bolt); "" for Config.Stores
	apiAddr        string // advertised API host:port
	sem            chan struct{}
	// restoring admits one restore at a time.
	restoring sync.Mutex
	// memberMu makes the leader's membership changes one at a time.
	memberMu sync.Mutex
	// record is the data directory's record of this member (record.go).
	record recordBox
	// moving is set while this node asks the leader to move it to new
	// addresses (Config.ChangeAddress).
	moving atomic.Bool
	// member is set once this node is known to have been a member of its
	// cluster (state at start, a bootstrap, a join, or seen in the
	// configuration); only a member can find itself removed.
	member atomic.Bool
	// done is closed once the node has stopped; exitErr says why it
	// stopped on its own (it was removed), nil after Shutdown or Close.
	done     chan struct{}
	doneOnce sync.Once
	exitErr  error

	// clock turns this node's monotonic clock into FSM time stamps.
	clock fsmClock
	// trailingLogs is the TrailingLogs last set by sizeTrailingLogs (0:
	// the configured one), slowestRestore the slowest restore measured
	// here (float64 bits of bytes a second; 0: none). See catchup.go.
	trailingLogs     atomic.Uint64
	slowestRestore   atomic.Uint64
	snapshotRestores atomic.Uint64

	// readyTerm is the term in which this node, as leader, has committed
	// its first entry; linearizable reads are served only in that term.
	readyTerm atomic.Uint64
	// hurried is set while the node, the sole voter, waits for its own
	// election with shortened timeouts (hurrySoleVoter); hurryMu orders
	// shortening them and restoring them.
	hurried atomic.Bool
	hurryMu sync.Mutex
	// confirmer shares leadership confirmations among concurrent
	// linearizable reads (confirm.go).
	confirmer leaderConfirmer

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started atomic.Bool
	stopped sync.Once
	stopErr error
}

var (
	_ fsm.Proposer = (*Node)(nil)
	_ fsm.Reader   = (*Node)(nil)
)

// New validates cfg and builds a node; Start brings it up.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: invalid config: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limit := newLogLimiter(logRepeatInterval)
	logger = slog.New(limitHandler{inner: logger.Handler(), l: limit}).With("node", cfg.ID)
	f, err := fsm.New(fsm.Config{Modules: domain.Modules(cfg.Domains), Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n := &Node{cfg: cfg, logger: logger, logLimit: limit, fsm: f, peers: cfg.PeerClient}
	n.clock.wall, n.clock.mono = time.Now, time.Now
	if cfg.hooks.WallClock != nil {
		n.clock.wall = cfg.hooks.WallClock
	}
	n.clock.wallStamps = cfg.hooks.StampsFromWallClock
	n.principals.Store(cfg.Principals)
	n.peers = peerClient(cfg)
	n.metrics = newMetrics(n)
	n.forwarder = newForwarder(n)
	if n.mux, err = n.buildMux(); err != nil {
		return nil, fmt.Errorf("cluster: invalid config: %w", err)
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.done = make(chan struct{})
	n.confirmer.verify = func() error { return waitFuture(n.ctx, n.raft.VerifyLeader()) }
	return n, nil
}

// Start opens the stores, starts raft and the HTTP API, bootstraps or joins
// when the data directory is new, and returns. A node with existing state
// resumes its membership: Bootstrap is then ignored, and Join only checked
// (it must name members of this node's own cluster). Before raft starts,
// Start refuses what would do harm (see startcheck.go): no state and
// nothing to start from, a data directory of another member, a member
// removed from its cluster, addresses other than the recorded ones
// without ChangeAddress. Joining retries until ctx ends or a decision
// refuses it.
func (n *Node) Start(ctx context.Context) (err error) {
	if !n.started.CompareAndSwap(false, true) {
		return errors.New("cluster: node already started")
	}
	cleanup := []func(){}
	defer func() {
		if err != nil {
			n.cancel()
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
			n.stopped.Do(n.closeDone) // a later Shutdown or Close has nothing to stop
		}
	}()

	if err := n.checkFresh(); err != nil {
		return err
	}
	if err := n.openStores(); err != nil {
		return err
	}
	cleanup = append(cleanup, func() { _ = n.stores.Close() })
	if err := n.openTransport(); err != nil {
		return err
	}
	cleanup = append(cleanup, func() { _ = n.closeTransport() })
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("cluster: listen on %s: %w", n.cfg.HTTPAddr, err)
	}
	if n.cfg.TLS != nil {
		ln = tls.NewListener(ln, n.cfg.TLS.apiServerConfig())
	}
	closeAPI := func() { _ = ln.Close() }
	cleanup = append(cleanup, func() { closeAPI() })
	n.apiAddr = n.cfg.HTTPAdvertise
	if n.apiAddr == "" {
		n.apiAddr = ln.Addr().String()
	}

	hasState, err := raft.HasExistingState(n.stores.Log, n.stores.Stable, n.stores.Snapshot)
	if err != nil {
		return fmt.Errorf("cluster: inspect raft state: %w", err)
	}
	if err := n.refuseFresh(hasState); err != nil {
		return err
	}
	if err := n.prepareRecord(ctx, hasState); err != nil {
		return err
	}
	n.member.Store(hasState || n.cfg.Bootstrap)
	notify := make(chan bool, 16)
	trans, guard := guardTransport(n.transport)
	n.guard = guard
	n.truncations = newTruncationWatch(n.stores.Log, n.logger)
	r, err := raft.NewRaft(n.raftConfig(notify), n.raftFSM(), n.truncations, n.stores.Stable, n.stores.Snapshot, trans)
	if err != nil {
		guard.close()
		return fmt.Errorf("cluster: start raft: %w", err)
	}
	n.raft = r
	n.truncations.watch(r.AppliedIndex)
	if !n.cfg.hooks.StaleSnapshotGuardOff {
		guard.watchApplied(r.AppliedIndex, n.logger)
	}
	cleanup = append(cleanup, func() {
		_ = r.Shutdown().Error()
		guard.close()
	})

	if !hasState && n.cfg.Bootstrap && n.cfg.Restore == "" {
		if err := n.bootstrap(); err != nil {
			return err
		}
	}
	if n.cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", n.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("cluster: listen on %s (%s): %w", n.cfg.MetricsAddr, n.cfg.name("MetricsAddr"), err)
		}
		n.metricsLn = mln
		cleanup = append(cleanup, func() { // Close of a serving server, so that Serve returns ErrServerClosed
			if n.metricsSrv != nil {
				_ = n.metricsSrv.Close()
			} else {
				_ = mln.Close()
			}
		})
	}
	n.hurrySoleVoter()
	n.startHTTP(ln)
	if n.metricsLn != nil {
		n.startMetrics(n.metricsLn)
	}
	// From here the server owns the listener: closing the server, not the
	// listener, makes Serve return ErrServerClosed instead of an error.
	// Then, as in stop, the background goroutines end (they watch n.ctx)
	// before the transport and stores close under them.
	closeAPI = func() {
		_ = n.httpSrv.Close()
		n.wg.Wait()
	}
	n.goBackground(func() { n.watchLeadership(notify) })
	n.goBackground(n.sizeTrailingLogs)
	n.forwarder.start()
	n.goBackground(n.registerSelf)
	n.goBackground(n.keepRecord)
	n.goBackground(n.watchRemoval)
	// Failed keyed effects (a projection file) are retried on the node's
	// own until they succeed.
	n.goBackground(func() { n.fsm.RetryEffects(n.ctx) })
	for _, d := range n.cfg.Domains {
		if d.Start != nil {
			n.goBackground(func() { d.Start(n.ctx, n) })
		}
	}
	n.logger.Info("node started", "raft_addr", n.raftAddr, "api_addr", n.apiAddr, "existing_state", hasState,
		"cluster_id", n.record.get().ClusterID, "log_store", n.logStore, "auth", n.AuthMode(), "tls", n.cfg.TLS != nil)
	if n.AuthMode() == "open" {
		n.logger.Warn("open development mode: every caller is trusted; the node listens on loopback only (configure principals to authenticate: arbiter serve --principals, Config.Principals)")
	}

	if !hasState && len(n.cfg.Join) > 0 {
		if err := n.joinCluster(ctx); err != nil {
			return err
		}
	}
	return nil
}

// prepareRecord checks a node with state against its data directory's
// record and stored configuration (and, with Join, the cluster Join
// names), seeds a new cluster from a backup (Restore), and writes the
// record this start begins with.
func (n *Node) prepareRecord(ctx context.Context, hasState bool) error {
	dir := n.cfg.DataDir
	rec, err := ReadRecord(dir)
	if dir == "" {
		rec, err = nil, nil
	}
	if err != nil {
		return err
	}
	if !hasState {
		fresh := MemberRecord{ID: n.cfg.ID, RaftAddr: n.raftAddr, APIAddr: n.apiAddr}
		if n.cfg.Bootstrap {
			fresh.ClusterID = newClusterID() // proposed by the first leader (ensureClusterID)
		}
		if n.cfg.Restore != "" {
			if err := n.seed(n.cfg.Restore); err != nil {
				return err
			}
		}
		return n.record.set(dir, fresh)
	}
	conf, err := storedConfiguration(n.stores)
	if err != nil {
		return fmt.Errorf("cluster: read the stored raft configuration: %w", err)
	}
	moving, err := n.checkResume(rec, conf)
	if err != nil {
		return err
	}
	if len(n.cfg.Join) > 0 {
		if err := n.checkJoinTargets(ctx, rec); err != nil {
			return err
		}
	}
	if rec == nil { // a data directory of a release before records
		rec = &MemberRecord{ID: n.cfg.ID, RaftAddr: n.raftAddr, APIAddr: n.apiAddr}
	}
	n.moving.Store(moving)
	// A move is recorded once the cluster holds the new addresses
	// (refreshRecord); until then the record keeps the old ones.
	return n.record.set(dir, *rec)
}

func (n *Node) openStores() error {
	if n.cfg.Stores != nil {
		n.stores = n.cfg.Stores
		if n.stores.Close == nil {
			n.stores.Close = func() error { return nil }
		}
		return nil
	}
	s, err := logstore.Open(n.cfg.DataDir, logstore.Options{
		Kind:            n.cfg.LogStore,
		NoSyncUnsafe:    n.cfg.NoSyncUnsafe,
		WALSegmentBytes: n.cfg.WALSegmentBytes,
		LogOutput:       slogWriter{n.logger.With("component", "snapshots")},
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	n.stores = &Stores{Log: s.Log, Stable: s.Stable, Snapshot: s.Snapshot, Close: s.Close}
	n.logStore = s.Kind
	return nil
}

func (n *Node) openTransport() error {
	if n.cfg.Transport != nil {
		n.transport = n.cfg.Transport
		n.closeTransport = func() error { return nil } // the caller owns it
		n.raftAddr = string(n.transport.LocalAddr())
		return nil
	}
	if n.cfg.TLS != nil {
		layer, err := newTLSStreamLayer(n.cfg.RaftAddr, n.cfg.RaftAdvertise, n.cfg.TLS)
		if err != nil {
			return fmt.Errorf("cluster: raft TLS listener on %s: %w", n.cfg.RaftAddr, err)
		}
		t := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: layer, MaxPool: 4, Timeout: 10 * time.Second, Logger: newHclog(n.logger, "raft-net"),
		})
		n.transport, n.closeTransport = t, t.Close
		n.raftAddr = string(t.LocalAddr())
		return nil
	}
	var advertise net.Addr
	if n.cfg.RaftAdvertise != "" {
		a, err := net.ResolveTCPAddr("tcp", n.cfg.RaftAdvertise)
		if err != nil {
			return fmt.Errorf("cluster: RaftAdvertise: %w", err)
		}
		advertise = a
	}
	t, err := raft.NewTCPTransportWithConfig(n.cfg.RaftAddr, advertise, &raft.NetworkTransportConfig{
		MaxPool: 4,
		Timeout: 10 * time.Second,
		Logger:  newHclog(n.logger, "raft-net"),
	})
	if err != nil {
		return fmt.Errorf("cluster: raft transport on %s: %w", n.cfg.RaftAddr, err)
	}
	n.transport, n.closeTransport = t, t.Close
	n.raftAddr = string(t.LocalAddr())
	return nil
}

func (n *Node) raftConfig(notify chan bool) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(n.cfg.ID)
	c.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	c.ElectionTimeout = n.cfg.ElectionTimeout
	c.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	c.CommitTimeout = n.cfg.CommitTimeout
	c.MaxAppendEntries = n.cfg.MaxAppendEntries
	c.BatchApplyCh = true
	c.SnapshotInterval = n.cfg.SnapshotInterval
	c.SnapshotThreshold = n.cfg.SnapshotThreshold
	c.TrailingLogs = n.cfg.TrailingLogs
	c.ShutdownOnRemove = true
	c.NotifyCh = notify
	c.Logger = newHclog(n.logger, "raft")
	return c
}

func (n *Node) bootstrap() error {
	servers := n.cfg.InitialServers
	if len(servers) == 0 {
		servers = []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(n.cfg.ID), Address: raft.ServerAddress(n.raftAddr)}}
	}
	if err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	n.logger.Info("bootstrapped a new cluster", "voters", len(servers))
	return nil
}

func (n *Node) goBackground(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Shutdown stops the node gracefully: a leader first hands leadership to
// another voter, then the API, raft, the transport and the stores close.
func (n *Node) Shutdown(ctx context.Context) error { return n.stop(ctx, true) }

// Close stops the node at once, without handing over leadership.
func (n *Node) Close() error { return n.stop(context.Background(), false) }

func (n *Node) stop(ctx context.Context, transfer bool) error {
	n.stopped.Do(func() {
		defer n.closeDone()
		if !n.started.Load() || n.raft == nil {
			n.cancel()
			return
		}
		if transfer && n.IsLeader() && n.voterCount() > 1 {
			if err := waitFuture(ctx, n.raft.LeadershipTransfer()); err != nil {
				n.logger.Warn("leadership transfer before shutdown failed", "error", err)
			} else {
				n.logger.Info("handed over leadership before shutdown")
			}
		}
		n.cancel()
		// In-flight requests get a short grace period. Connections that
		// never sent a request count as busy in http.Server.Shutdown for
		// their first 5 s, so waiting longer would only wait for those.
		n.httpSrv.SetKeepAlivesEnabled(false)
		httpCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := n.httpSrv.Shutdown(httpCtx); err != nil {
			_ = n.httpSrv.Close()
		}
		cancel()
		if n.metricsSrv != nil {
			_ = n.metricsSrv.Close()
		}
		if transfer {
			n.snapshotBeforeStop(ctx)
		}
		errRaft := n.raft.Shutdown().Error()
		n.wg.Wait()
		n.guard.close() // no heartbeat may touch the stores below
		errTransport := n.closeTransport()
		errStores := n.stores.Close()
		n.stopErr = errors.Join(errRaft, errTransport, errStores)
		n.logger.Info("node stopped")
	})
	return n.stopErr
}

// snapshotBeforeStop takes a snapshot, within ctx, when the log holds at
// least SnapshotThreshold applied entries past the last one: the next
// start then restores it instead of replaying them. Under sustained
// writes raft's own snapshots, each of which writes the whole state, fall
// behind; a node of a million records stopped with 263,000 entries to
// replay took 17 s to restart (BENCHMARKS.md). A stop that is not
// graceful (Close, a crash) replays them as before.
func (n *Node) snapshotBeforeStop(ctx context.Context) {
	last, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	applied := n.raft.AppliedIndex()
	if applied < last+n.cfg.SnapshotThreshold {
		return
	}
	began := time.Now()
	err := waitFuture(ctx, n.raft.Snapshot())
	switch {
	case err == nil:
		n.logger.Info("took a snapshot before shutdown", "entries", applied-last, "took", time.Since(began).Round(time.Millisecond))
	case errors.Is(err, raft.ErrNothingNewToSnapshot):
	default:
		n.logger.Warn("snapshot before shutdown failed; the next start replays the log", "error", err)
	}
}

func (n *Node) closeDone() { n.doneOnce.Do(func() { close(n.done) }) }

// Done is closed once the node has stopped: after Shutdown or Close, after
// a failed Start, or on its own when it finds it was removed from its
// cluster (Err then says so).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is why the node stopped on its own, once Done is closed; nil while
// it runs and after Shutdown, Close or a failed Start.
func (n *Node) Err() error {
	select {
	case <-n.done:
		return n.exitErr
	default:
		return nil
	}
}

// peerClient is the HTTP client a node uses to reach other nodes: the
// configured one (tests inject faults there) or pooled connections, with
// this node's certificate and the peer token when they are configured.
func peerClient(cfg Config) *http.Client {
	base := http.RoundTripper(newPeerTransport())
	if cfg.PeerClient != nil && cfg.PeerClient.Transport != nil {
		base = cfg.PeerClient.Transport
	}
	if cfg.TLS != nil {
		if t, ok := base.(*http.Transport); ok {
			t.TLSClientConfig = cfg.TLS.peerClientConfig()
		}
	}
	if cfg.PeerToken != "" {
		base = bearerTransport{base: base, token: cfg.PeerToken}
	}
	return &http.Client{Transport: base}
}

// url is a peer's API URL for path.
func (n *Node) url(api, path string) string {
	if n.cfg.TLS != nil {
		return "https://" + api + path
	}
	return "http://" + api + path
}

// waitFuture waits for a raft future or for ctx, whichever comes first.
func waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ID is this node's raft server id.
func (n *Node) ID() string { return n.cfg.ID }

// APIAddr is the advertised host:port of this node's HTTP API.
func (n *Node) APIAddr() string { return n.apiAddr }

// RaftAddr is the advertised raft address.
func (n *Node) RaftAddr() string { return n.raftAddr }

// FSM exposes the local state machine (for state hashes and stale reads).
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// Raft exposes the raft instance for tooling and tests. Changing
// membership through it bypasses member metadata; use Join and Remove.
func (n *Node) Raft() *raft.Raft { return n.raft }

// IsLeader reports whether this node believes it is the leader.
func (n *Node) IsLeader() bool { return n.raft != nil && n.raft.State() == raft.Leader }

func (n *Node) voterCount() int {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	c := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			c++
		}
	}
	return c
}

// leaderAPI returns the leader's id and API address as this node knows
// them, or "" when unknown.
func (n *Node) leaderAPI() (id, api string) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	if m, ok := n.fsm.Member(string(lid)); ok {
		return m.ID, m.APIAddr
	}
	return string(lid), ""
}
