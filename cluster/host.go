package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/cluster/internal/hclogslog"
	"github.com/arbiterhq/arbiter/cluster/transport"
	logstore "github.com/arbiterhq/arbiter/log/store"
	"github.com/hashicorp/raft"
)

func (h *raftHost) openStores() error {
	if h.cfg.Stores != nil {
		h.stores = h.cfg.Stores
		if h.stores.Close == nil {
			h.stores.Close = func() error { return nil }
		}
		return nil
	}
	s, err := logstore.Open(h.cfg.DataDir, logstore.Options{
		Kind:            h.cfg.LogStore,
		NoSyncUnsafe:    h.cfg.NoSyncUnsafe,
		WALSegmentBytes: h.cfg.WALSegmentBytes,
		LogOutput:       hclogslog.Writer{L: h.logger.With("component", "snapshots")},
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	h.stores = &Stores{Log: s.Log, Stable: s.Stable, Snapshot: s.Snapshot, Close: s.Close}
	h.logStore = s.Kind
	return nil
}

func (h *raftHost) openTransport() error {
	if h.cfg.Transport != nil {
		h.transport = h.cfg.Transport
		h.closeTransport = func() error { return nil } // the caller owns it
		h.raftAddr = string(h.transport.LocalAddr())
		return nil
	}
	if h.cfg.TLS != nil {
		layer, err := transport.NewTLSStreamLayer(h.cfg.RaftAddr, h.cfg.RaftAdvertise, h.cfg.TLS)
		if err != nil {
			return fmt.Errorf("cluster: raft TLS listener on %s: %w", h.cfg.RaftAddr, err)
		}
		t := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: layer, MaxPool: 4, Timeout: 10 * time.Second, Logger: hclogslog.New(h.logger, "raft-net"),
		})
		h.transport, h.closeTransport = t, t.Close
		h.raftAddr = string(t.LocalAddr())
		return nil
	}
	var advertise net.Addr
	if h.cfg.RaftAdvertise != "" {
		a, err := net.ResolveTCPAddr("tcp", h.cfg.RaftAdvertise)
		if err != nil {
			return fmt.Errorf("cluster: RaftAdvertise: %w", err)
		}
		advertise = a
	}
	t, err := raft.NewTCPTransportWithConfig(h.cfg.RaftAddr, advertise, &raft.NetworkTransportConfig{
		MaxPool: 4,
		Timeout: 10 * time.Second,
		Logger:  hclogslog.New(h.logger, "raft-net"),
	})
	if err != nil {
		return fmt.Errorf("cluster: raft transport on %s: %w", h.cfg.RaftAddr, err)
	}
	h.transport, h.closeTransport = t, t.Close
	h.raftAddr = string(t.LocalAddr())
	return nil
}

func (h *raftHost) raftConfig(notify chan bool) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(h.cfg.ID)
	c.HeartbeatTimeout = h.cfg.HeartbeatTimeout
	c.ElectionTimeout = h.cfg.ElectionTimeout
	c.LeaderLeaseTimeout = h.cfg.LeaderLeaseTimeout
	c.CommitTimeout = h.cfg.CommitTimeout
	c.MaxAppendEntries = h.cfg.MaxAppendEntries
	c.BatchApplyCh = true
	c.SnapshotInterval = h.cfg.SnapshotInterval
	c.SnapshotThreshold = h.cfg.SnapshotThreshold
	c.TrailingLogs = h.cfg.TrailingLogs
	c.ShutdownOnRemove = true
	c.NotifyCh = notify
	c.Logger = hclogslog.New(h.logger, "raft")
	return c
}

func (h *raftHost) bootstrap() error {
	servers := h.cfg.InitialServers
	if len(servers) == 0 {
		servers = []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(h.cfg.ID), Address: raft.ServerAddress(h.raftAddr)}}
	}
	if err := h.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	h.logger.Info("bootstrapped a new cluster", "voters", len(servers))
	return nil
}

// snapshotBeforeStop takes a snapshot, within ctx, when the log holds at
// least SnapshotThreshold applied entries past the last one: the next
// start then restores it instead of replaying them. Under sustained
// writes raft's own snapshots, each of which writes the whole state, fall
// behind; a node of a million records stopped with 263,000 entries to
// replay took 17 s to restart (BENCHMARKS.md). A stop that is not
// graceful (Close, a crash) replays them as before.
func (h *raftHost) snapshotBeforeStop(ctx context.Context) {
	last, _ := strconv.ParseUint(h.raft.Stats()["last_snapshot_index"], 10, 64)
	applied := h.raft.AppliedIndex()
	if applied < last+h.cfg.SnapshotThreshold {
		return
	}
	began := time.Now()
	err := waitFuture(ctx, h.raft.Snapshot())
	switch {
	case err == nil:
		h.logger.Info("took a snapshot before shutdown", "entries", applied-last, "took", time.Since(began).Round(time.Millisecond))
	case errors.Is(err, raft.ErrNothingNewToSnapshot):
	default:
		h.logger.Warn("snapshot before shutdown failed; the next start replays the log", "error", err)
	}
}

// startRaft starts raft on the opened stores and transport, behind the
// transport guard and the truncation watch; stop undoes it (a failed
// Start).
func (h *raftHost) startRaft(notify chan bool) (stop func(), err error) {
	trans, guard := transport.NewGuard(h.transport)
	guard.SetPipeline(h.cfg.RaftPipeline)
	h.guard = guard
	h.truncations = newTruncationWatch(h.stores.Log, h.logger)
	r, err := raft.NewRaft(h.raftConfig(notify), h.raftFSM(), h.truncations, h.stores.Stable, h.stores.Snapshot, trans)
	if err != nil {
		guard.Shut()
		return nil, fmt.Errorf("cluster: start raft: %w", err)
	}
	h.raft = r
	h.truncations.watch(r.AppliedIndex)
	if !h.cfg.hooks.StaleSnapshotGuardOff {
		guard.WatchApplied(r.AppliedIndex, h.logger)
	}
	return func() {
		_ = r.Shutdown().Error()
		guard.Shut()
	}, nil
}

// closeBelowRaft closes what raft ran on, once raft has shut down: the
// guard first (no heartbeat may touch the stores below), the transport,
// the stores.
func (h *raftHost) closeBelowRaft() error {
	h.guard.Shut()
	errTransport := h.closeTransport()
	errStores := h.stores.Close()
	return errors.Join(errTransport, errStores)
}

// termReady marks the term in which this leader has committed its first
// entry (0: none), and with it the index a restarted node must reach to
// be caught up (ready.go).
func (h *raftHost) termReady(term uint64) {
	h.readyTerm.Store(term)
	if term != 0 {
		h.guard.RecordStart(h.fsm.AppliedIndex())
	}
}

// trailingLogsNow is Node.TrailingLogs.
func (h *raftHost) trailingLogsNow() uint64 {
	if v := h.trailingLogs.Load(); v > 0 {
		return v
	}
	return h.cfg.TrailingLogs
}

// truncationCount is Node.Truncations.
func (h *raftHost) truncationCount() uint64 {
	if h.truncations == nil {
		return 0
	}
	return h.truncations.count.Load()
}
