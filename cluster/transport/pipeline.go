package transport

import (
	"sync"

	"github.com/hashicorp/raft"
)

// The pipeline's wedge, and what the guard does about it.
//
// hashicorp/raft (v1.7.3) replicates to a healthy follower through an
// AppendPipeline: pipelineReplicate (replication.go) sends, and its
// decoder goroutine pipelineDecode reads the answers from the pipeline's
// Consumer channel. pipelineDecode returns on the first unsuccessful
// answer (Success=false: a log mismatch, a follower whose disk refused
// the entries; or a newer term). NetworkTransport's netPipeline has its
// own decoder, decodeResponses (net_transport.go), which reads each
// answer off the connection and hands it to Consumer; both of its
// channels hold MaxRPCsInFlight-2 futures, none at the default of 2. Once
// pipelineDecode has returned nobody reads Consumer, so decodeResponses
// parks handing over the next answer (net_transport.go:853), and the
// sender, whose select may pick a ready trigger (or its commit timeout)
// over pipelineDecode's finish, parks handing a further request to
// decodeResponses (net_transport.go:886). Only the sender closes the
// pipeline (a defer in pipelineReplicate), and it is the one parked:
// replication to that follower stops for good while its heartbeats go on
// (no election heals it), and raft.Shutdown waits for the parked
// goroutine forever (also after the node lost and regained leadership:
// the old term's goroutine is still there).
//
// The guard's pipeline (guardedPipeline) stands between the two: it
// reads the transport's answers itself and hands them to raft, and once
// it has handed over an answer after which pipelineDecode returns, it
// closes the transport's pipeline. That unparks everything: the sender's
// send fails (ErrPipelineShutdown, or a write on the released
// connection), pipelineReplicate stops, and raft falls back to one
// AppendEntries at a time, then pipelines again, as it means to.

// guardedPipeline wraps the transport's pipeline to one follower.
type guardedPipeline struct {
	inner raft.AppendPipeline
	id    raft.ServerID
	peers *peerTracker
	// out is what raft's pipelineDecode reads. Unbuffered: the
	// transport's pipeline bounds what is in flight.
	out    chan raft.AppendFuture
	closed chan struct{} // closed by Close: ends forward
	once   sync.Once
	err    error
}

func newGuardedPipeline(inner raft.AppendPipeline, id raft.ServerID, peers *peerTracker) *guardedPipeline {
	p := &guardedPipeline{inner: inner, id: id, peers: peers, out: make(chan raft.AppendFuture), closed: make(chan struct{})}
	go p.forward()
	return p
}

// forward hands raft the transport's answers, in order, until raft stops
// reading them, and records each one for the per-peer metrics.
func (p *guardedPipeline) forward() {
	in := p.inner.Consumer()
	for {
		var f raft.AppendFuture
		select {
		case f = <-in:
		case <-p.closed:
			return
		}
		req, resp := f.Request(), f.Response()
		if f.Error() != nil {
			p.peers.failed(p.id)
		} else {
			p.peers.answered(p.id, req.Term, resp.LastLog)
		}
		select {
		case p.out <- f:
		case <-p.closed:
			return
		}
		if endsDecoder(f) {
			// pipelineDecode has returned, or returns now without
			// reading another answer: close the transport's pipeline
			// from here, since the sender may be parked in it.
			_ = p.inner.Close()
			return
		}
	}
}

// endsDecoder reports whether raft's pipelineDecode returns after reading
// f: on a newer term or an unsuccessful answer (a failed RPC leaves the
// response unsuccessful). An error counts too: closing the pipeline
// early is always safe (raft falls back to plain AppendEntries), leaving
// it open after the decoder returned is not.
func endsDecoder(f raft.AppendFuture) bool {
	resp := f.Response()
	return f.Error() != nil || !resp.Success || resp.Term > f.Request().Term
}

// AppendEntries sends through the transport's pipeline.
func (p *guardedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	f, err := p.inner.AppendEntries(args, resp)
	if err != nil {
		p.peers.failed(p.id)
	}
	return f, err
}

// Consumer is what raft's pipelineDecode reads.
func (p *guardedPipeline) Consumer() <-chan raft.AppendFuture { return p.out }

// Close ends forward and closes the transport's pipeline (raft calls it
// when pipelineReplicate returns; it may already be closed by forward).
func (p *guardedPipeline) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.err = p.inner.Close()
	})
	return p.err
}
