package transport

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Guard stands between the raft transport and raft, against two
// hazards of hashicorp/raft.
//
// Heartbeats at shutdown. Raft handles heartbeats on the transport's own
// goroutines (the fast path of NetworkTransport), outside the goroutines
// raft.Shutdown waits for. A heartbeat that arrives just before shutdown
// can still be running when the node closes its boltdb stores, and if it
// carries a newer term raft panics writing it ("failed to save current
// term: database not open"): the fault harness's soak hit exactly that.
// The guard runs each heartbeat under a read lock; close takes the write
// lock, so it waits for the ones in flight, and refuses later ones, before
// the stores close.
//
// Stale snapshots. Every other RPC reaches raft through the guard's
// consumer, which refuses an InstallSnapshot behind the applied index
// (stale_snapshot.go).
//
// Stale tails. The consumer also lowers each AppendEntries' commit index
// to the last entry the request vouches for, the Raft paper's rule, which
// raft itself does not follow (commit_rule.go).
//
// Pipelined replication. Off by default (SetPipeline turns it on), the
// guard offers raft no AppendEntries pipeline, so raft replicates with
// one AppendEntries RPC at a time (each carrying up to MaxAppendEntries
// entries). On, it offers the transport's pipeline behind a wrapper that
// closes it once raft's pipeline decoder has stopped: without that,
// hashicorp/raft's pipeline wedges after a follower's unsuccessful
// answer, replication to that follower stops for good while heartbeats
// go on, and raft.Shutdown waits forever (pipeline.go explains it; the
// full suite here once hung 17 minutes in a TCP fault-harness cleanup on
// exactly that stack).
type Guard struct {
	raft.Transport
	mu     sync.RWMutex
	closed bool
	// pipeline: offer raft the transport's AppendEntries pipeline
	// (SetPipeline).
	pipeline atomic.Bool
	// rawPipeline, for tests, hands raft the transport's pipeline as it
	// is, unguarded (the wedge pipeline.go explains).
	rawPipeline bool
	// pipelines counts the pipelines the guard handed raft (tests).
	pipelines atomic.Uint64

	consumer chan raft.RPC // what raft reads, after the filter
	stop     chan struct{} // closed by close: ends the filter
	staleFilter
	// peers records the answers to this node's AppendEntries and
	// InstallSnapshot, for the per-peer metrics of a leader (peers.go).
	peers *peerTracker
	// start is what this node must apply before it is ready (ready.go):
	// the filter records the commit index of the first AppendEntries
	// from a leader that carries one.
	start startMark
}

var errShuttingDown = errors.New("cluster: node shutting down")

// NewGuard wraps t, keeping the optional interfaces raft looks for
// (pre-vote, close) exactly when t has them.
func NewGuard(t raft.Transport) (raft.Transport, *Guard) {
	g := &Guard{Transport: t, peers: newPeerTracker()}
	g.stop, g.consumer = make(chan struct{}), make(chan raft.RPC)
	go g.filterInbound(t.Consumer(), g.consumer)
	if _, ok := t.(raft.WithPreVote); ok {
		return &guardPreVote{g}, g
	}
	return g, g
}

// AppendEntriesPipeline refuses unless SetPipeline turned it on; on, it
// returns the transport's pipeline behind the guard's (pipeline.go).
func (g *Guard) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if !g.pipeline.Load() {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	p, err := g.Transport.AppendEntriesPipeline(id, target)
	if err != nil || g.rawPipeline {
		return p, err
	}
	g.pipelines.Add(1)
	return newGuardedPipeline(p, id, g.peers), nil
}

// SetPipeline offers raft the transport's AppendEntries pipeline (on) or
// not (off, the default). Call it before raft starts.
func (g *Guard) SetPipeline(on bool) { g.pipeline.Store(on) }

// Consumer is raft's inbound RPC channel, through the guard's filter
// (filterInbound).
func (g *Guard) Consumer() <-chan raft.RPC { return g.consumer }

func (g *Guard) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		g.Transport.SetHeartbeatHandler(nil)
		return
	}
	g.Transport.SetHeartbeatHandler(func(rpc raft.RPC) {
		g.mu.RLock()
		defer g.mu.RUnlock()
		if g.closed {
			respondError(rpc, errShuttingDown)
			return
		}
		cb(rpc)
	})
}

// Close closes the wrapped transport when it can be closed (raft calls it
// at shutdown when it exists; the guard always has it).
func (g *Guard) Close() error {
	if c, ok := g.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// Shut waits for heartbeats in flight and refuses any later one, and
// ends the inbound filter.
func (g *Guard) Shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		close(g.stop)
	}
	g.closed = true
}

type guardPreVote struct{ *Guard }

func (g *guardPreVote) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return g.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}

// respondError answers an RPC the guard does not pass to raft. The reply
// carries an empty response of the request's type, not nil: raft's
// in-memory pipeline reads the response before it looks at the error, and
// panics on a nil one.
func respondError(rpc raft.RPC, err error) {
	var resp any
	switch rpc.Command.(type) {
	case *raft.AppendEntriesRequest:
		resp = &raft.AppendEntriesResponse{}
	case *raft.RequestVoteRequest:
		resp = &raft.RequestVoteResponse{}
	case *raft.RequestPreVoteRequest:
		resp = &raft.RequestPreVoteResponse{}
	case *raft.InstallSnapshotRequest:
		resp = &raft.InstallSnapshotResponse{}
	case *raft.TimeoutNowRequest:
		resp = &raft.TimeoutNowResponse{}
	}
	rpc.Respond(resp, err)
}
