package clustertest

import (
	"io"

	"github.com/hashicorp/raft"
)

// faultTransport is node from's raft transport: the in-memory transport
// with every outbound RPC first passing network.hold, which delays it
// (Options-free: see Cluster.Delay) or holds it while either end is
// paused (Cluster.Pause). Cut links are not handled here: rewire
// disconnects the underlying transports, which also ends pipelines.
type faultTransport struct {
	*raft.InmemTransport
	nw   *network
	from int
}

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
