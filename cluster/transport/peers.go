package transport

import (
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// peerTracker records, from the RPCs a leader sends, when each follower
// last answered and how far its log reaches: hashicorp/raft keeps its
// replication state to itself, and its go-metrics are process-wide (a
// process may run several nodes). Every AppendEntries (heartbeats too)
// and InstallSnapshot goes through the transport guard, which records the
// answer here.
type peerTracker struct {
	mu    sync.Mutex
	peers map[raft.ServerID]*peerState
	now   func() time.Time
}

// peerState is what the last answers of one peer said.
type peerState struct {
	term        uint64    // the term of the leader that heard the last answer
	lastContact time.Time // the last answer, in that term
	lastLog     uint64    // the follower's last log index, as it last said
	failures    uint64    // RPCs to it that failed (any term)
}

func newPeerTracker() *peerTracker {
	return &peerTracker{peers: map[raft.ServerID]*peerState{}, now: time.Now}
}

// answered records a successful RPC of a leader in term to id, whose log
// reaches lastLog.
func (p *peerTracker) answered(id raft.ServerID, term, lastLog uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state(id)
	s.term, s.lastContact, s.lastLog = term, p.now(), lastLog
}

// failed records an RPC to id that got no answer.
func (p *peerTracker) failed(id raft.ServerID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state(id).failures++
}

func (p *peerTracker) state(id raft.ServerID) *peerState {
	s := p.peers[id]
	if s == nil {
		if len(p.peers) >= maxTrackedPeers {
			clear(p.peers) // bounded: a cluster has far fewer members
		}
		s = &peerState{}
		p.peers[id] = s
	}
	return s
}

// maxTrackedPeers bounds the tracker (raft contacts only members).
const maxTrackedPeers = 256

// PeerView is one peer as a leader sees it.
type PeerView struct {
	ID          string
	Known       bool          // answered in the current term
	SinceAnswer time.Duration // since its last answer in the current term
	Lag         uint64        // entries behind the leader's last index
	Failures    uint64
}

// view reports the peers in ids as the leader of term, whose log reaches
// lastIndex, sees them.
func (p *peerTracker) view(ids []raft.ServerID, term, lastIndex uint64) []PeerView {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	out := make([]PeerView, 0, len(ids))
	for _, id := range ids {
		v := PeerView{ID: string(id)}
		if s := p.peers[id]; s != nil {
			v.Failures = s.failures
			if s.term == term {
				v.Known = true
				v.SinceAnswer = now.Sub(s.lastContact)
				if lastIndex > s.lastLog {
					v.Lag = lastIndex - s.lastLog
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// AppendEntries records the follower's answer (heartbeats are
// AppendEntries too).
func (g *Guard) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := g.Transport.AppendEntries(id, target, args, resp)
	if err != nil {
		g.peers.failed(id)
	} else {
		g.peers.answered(id, args.Term, resp.LastLog)
	}
	return err
}

// InstallSnapshot records the follower's answer: once it succeeded, the
// follower's log reaches the snapshot.
func (g *Guard) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := g.Transport.InstallSnapshot(id, target, args, resp, data)
	switch {
	case err != nil:
		g.peers.failed(id)
	case resp.Success:
		g.peers.answered(id, args.Term, args.LastLogIndex)
	}
	return err
}

// Peers reports the peers in ids as the leader of term, whose log
// reaches lastIndex, sees them (for the per-peer metrics).
func (g *Guard) Peers(ids []raft.ServerID, term, lastIndex uint64) []PeerView {
	return g.peers.view(ids, term, lastIndex)
}
