package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

// Node is one member of an Arbiter cluster. It implements fsm.Proposer and
// fsm.Reader. It composes the parts of parts.go, each with one job, and
// its methods delegate to them.
type Node struct {
	*core
	logLimit *logLimiter // repeated warnings and errors (logging.go)

	host    *raftHost
	cmds    *commands
	members *membership
	leader  *leadership
	backups *backups
	api     *httpAPI

	started  atomic.Bool
	stopped  sync.Once
	stopErr  error
	doneOnce sync.Once
}

var (
	_ fsm.Proposer = (*Node)(nil)
	_ fsm.Reader   = (*Node)(nil)
	_ apiNode      = (*Node)(nil)
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
	// The last lines at INFO and above are kept for the debug bundle too,
	// whatever the host's own handler keeps.
	recent := newLogRing()
	tee := slog.NewMultiHandler(logger.Handler(), slog.NewJSONHandler(recent, &slog.HandlerOptions{Level: slog.LevelInfo}))
	logger = slog.New(limitHandler{inner: tee, l: limit}).With("node", cfg.ID)
	f, err := fsm.New(fsm.Config{Modules: domain.Modules(cfg.Domains), Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &core{cfg: cfg, logger: logger, fsm: f, peers: peerClient(cfg), recent: recent, done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	n := &Node{core: c, logLimit: limit}

	h := &raftHost{core: c}
	h.clock.wall, h.clock.mono = time.Now, time.Now
	if cfg.hooks.WallClock != nil {
		h.clock.wall = cfg.hooks.WallClock
	}
	if cfg.hooks.Clock != nil {
		h.clock.mono = cfg.hooks.Clock
	}
	h.clock.wallStamps = cfg.hooks.StampsFromWallClock
	h.confirmer.verify = func() error { return waitFuture(c.ctx, c.raft.VerifyLeader()) }
	n.host = h
	n.cmds = &commands{core: c, host: h, forwarder: newForwarder(c)}
	n.members = &membership{core: c, host: h, leader: n.cmds, exit: n.exit}
	n.leader = &leadership{core: c, host: h, members: n.members}
	n.members.caps = n.leader
	n.backups = &backups{core: c, host: h, ticker: n.leader}
	n.api = &httpAPI{core: c, node: n, host: h, dom: n}
	n.api.principals.Store(cfg.Principals)

	c.metrics = newMetrics(n)
	if n.api.mux, err = n.api.buildMux(); err != nil {
		return nil, fmt.Errorf("cluster: invalid config: %w", err)
	}
	return n, nil
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
		if transfer && n.isLeader() && n.voterCount() > 1 {
			if err := waitFuture(ctx, n.raft.LeadershipTransfer()); err != nil {
				n.logger.Warn("leadership transfer before shutdown failed", "error", err)
			} else {
				n.logger.Info("handed over leadership before shutdown")
			}
		}
		n.cancel()
		n.api.stop(ctx)
		if transfer {
			n.host.snapshotBeforeStop(ctx)
		}
		errRaft := n.raft.Shutdown().Error()
		n.wg.Wait()
		n.stopErr = errors.Join(errRaft, n.host.closeBelowRaft())
		n.logger.Info("node stopped")
	})
	return n.stopErr
}

// exit logs why the node stops on its own and stops it; Done and Err
// report it.
func (n *Node) exit(err error) {
	if n.ctx.Err() != nil {
		return // stopping anyway
	}
	n.logger.Error("stopping: this node is no longer a member of its cluster", "reason", err)
	n.exitErr = err
	go func() { _ = n.stop(context.Background(), false) }()
}

func (n *Node) closeDone() { n.doneOnce.Do(func() { close(n.done) }) }

// Done is closed once the node has stopped: after Shutdown or Close, after
// a failed Start, or on its own when it finds it was removed from its
// cluster (Err then says so).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is why the node stopped on its own, once Done is closed; nil while
// it runs and after Shutdown, Close or a failed Start.
func (n *Node) Err() error { return n.stopReason() }

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
			t.TLSClientConfig = cfg.TLS.PeerClientConfig()
		}
	}
	if cfg.PeerToken != "" {
		base = bearerTransport{base: base, token: cfg.PeerToken}
	}
	return &http.Client{Transport: base}
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
func (n *Node) IsLeader() bool { return n.isLeader() }
