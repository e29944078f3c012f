package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/raft"
)

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

	h := n.host
	if err := n.members.checkFresh(); err != nil {
		return err
	}
	if err := h.openStores(); err != nil {
		return err
	}
	cleanup = append(cleanup, func() { _ = h.stores.Close() })
	if err := h.openTransport(); err != nil {
		return err
	}
	cleanup = append(cleanup, func() { _ = h.closeTransport() })
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("cluster: listen on %s: %w", n.cfg.HTTPAddr, err)
	}
	if n.cfg.TLS != nil {
		ln = tls.NewListener(ln, n.cfg.TLS.APIServerConfig())
	}
	closeAPI := func() { _ = ln.Close() }
	cleanup = append(cleanup, func() { closeAPI() })
	n.apiAddr = n.cfg.HTTPAdvertise
	if n.apiAddr == "" {
		n.apiAddr = ln.Addr().String()
	}

	hasState, err := raft.HasExistingState(h.stores.Log, h.stores.Stable, h.stores.Snapshot)
	if err != nil {
		return fmt.Errorf("cluster: inspect raft state: %w", err)
	}
	if err := n.members.refuseFresh(hasState); err != nil {
		return err
	}
	var seed func() error
	if n.cfg.Restore != "" {
		seed = func() error { return n.backups.seed(n.cfg.Restore, h.stores, h.transport) }
	}
	if err := n.members.prepareRecord(ctx, hasState, h.stores, seed); err != nil {
		return err
	}
	n.members.member.Store(hasState || n.cfg.Bootstrap)
	notify := make(chan bool, 16)
	stopRaft, err := h.startRaft(notify)
	if err != nil {
		return err
	}
	cleanup = append(cleanup, stopRaft)

	if !hasState && n.cfg.Bootstrap && n.cfg.Restore == "" {
		if err := h.bootstrap(); err != nil {
			return err
		}
	}
	if err := n.api.listenMetrics(); err != nil {
		return err
	}
	cleanup = append(cleanup, n.api.closeMetrics)
	h.hurrySoleVoter()
	n.api.start(ln)
	// From here the server owns the listener: closing the server, not the
	// listener, makes Serve return ErrServerClosed instead of an error.
	// Then, as in stop, the background goroutines end (they watch n.ctx)
	// before the transport and stores close under them.
	closeAPI = func() {
		_ = n.api.httpSrv.Close()
		n.wg.Wait()
	}
	n.goBackground(func() { n.leader.watchLeadership(notify) })
	n.goBackground(h.sizeTrailingLogs)
	n.cmds.forwarder.start()
	n.goBackground(n.members.registerSelf)
	n.goBackground(n.members.keepRecord)
	n.goBackground(n.members.watchRemoval)
	// Failed keyed effects (a projection file) are retried on the node's
	// own until they succeed.
	n.goBackground(func() { n.fsm.RetryEffects(n.ctx) })
	for _, d := range n.cfg.Domains {
		if d.Start != nil {
			n.goBackground(func() { d.Start(n.ctx, n) })
		}
	}
	n.logger.Info("node started", "raft_addr", n.raftAddr, "api_addr", n.apiAddr, "existing_state", hasState,
		"cluster_id", n.members.recordedClusterID(), "log_store", h.logStore, "auth", n.AuthMode(), "tls", n.cfg.TLS != nil)
	if n.AuthMode() == "open" {
		n.logger.Warn("open development mode: every caller is trusted; the node listens on loopback only (configure principals to authenticate: arbiter serve --principals, Config.Principals)")
	}

	if !hasState && len(n.cfg.Join) > 0 {
		if err := n.members.joinCluster(ctx); err != nil {
			return err
		}
	}
	return nil
}
