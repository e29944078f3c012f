package clustertest

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// faultTransport is node from's raft transport: the in-memory transport
// with every outbound RPC first passing network.hold, which delays it
// (see Cluster.Delay) or holds it while either end is paused (see
// Cluster.Pause). Cut links are not handled here: rewire disconnects the
// underlying transports, which also ends pipelines.
//
// It also gives the in-memory transport the heartbeat fast path of
// raft's NetworkTransport, which production uses: a heartbeat is handed
// to raft's heartbeat handler on the receiving goroutine instead of
// queueing behind other RPCs for the main loop. That concurrency is
// where hashicorp/raft#695 (divergence after a healed partition) lives,
// so the harness must have it to be able to find such bugs.
type faultTransport struct {
	*raft.InmemTransport
	nw   *network
	from int

	consumer  chan raft.RPC
	heartbeat atomic.Pointer[func(raft.RPC)]
	done      chan struct{}
	closeOnce sync.Once
}

func newFaultTransport(inner *raft.InmemTransport, nw *network, from int) *faultTransport {
	f := &faultTransport{InmemTransport: inner, nw: nw, from: from, consumer: make(chan raft.RPC), done: make(chan struct{})}
	go f.receive()
	return f
}

func (f *faultTransport) Consumer() <-chan raft.RPC { return f.consumer }

func (f *faultTransport) SetHeartbeatHandler(cb func(raft.RPC)) { f.heartbeat.Store(&cb) }

// receive moves inbound RPCs to raft, serving heartbeats on the spot when
// raft has set a handler, with NetworkTransport's test for a heartbeat.
func (f *faultTransport) receive() {
	for {
		select {
		case rpc := <-f.InmemTransport.Consumer():
			if ae, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && isHeartbeat(ae) {
				if cb := f.heartbeat.Load(); cb != nil && *cb != nil {
					(*cb)(rpc)
					continue
				}
			}
			select {
			case f.consumer <- rpc:
			case <-f.done:
				return
			}
		case <-f.done:
			return
		}
	}
}

func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	return req.Term != 0 && (len(req.Addr) > 0 || len(req.Leader) > 0) && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

// stop ends receive; the node using the transport must be closed first.
func (f *faultTransport) stop() { f.closeOnce.Do(func() { close(f.done) }) }

func (f *faultTransport) hold(target raft.ServerAddress) error {
	return f.nw.hold(f.from, f.nw.raftIndex(string(target)))
}

func (f *faultTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if err := f.hold(target); err != nil {
		return err
	}
	return f.InmemTransport.AppendEntries(id, target, args, resp)
}

func (f *faultTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if err := f.hold(target); err != nil {
		return err
	}
	return f.InmemTransport.RequestVote(id, target, args, resp)
}

func (f *faultTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if err := f.hold(target); err != nil {
		return err
	}
	return f.InmemTransport.RequestPreVote(id, target, args, resp)
}

func (f *faultTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if err := f.hold(target); err != nil {
		return err
	}
	return f.InmemTransport.InstallSnapshot(id, target, args, resp, data)
}

func (f *faultTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if err := f.hold(target); err != nil {
		return err
	}
	return f.InmemTransport.TimeoutNow(id, target, args, resp)
}

func (f *faultTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := f.InmemTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return &faultPipeline{AppendPipeline: p, hold: func() error { return f.hold(target) }}, nil
}

// faultPipeline holds each pipelined AppendEntries like a plain one. The
// hold runs on raft's replication goroutine, so a delayed entry also
// delays the ones behind it, as on a slow TCP stream.
type faultPipeline struct {
	raft.AppendPipeline
	hold func() error
}

func (p *faultPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if err := p.hold(); err != nil {
		return nil, err
	}
	return p.AppendPipeline.AppendEntries(args, resp)
}
