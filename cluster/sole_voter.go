package cluster

import (
	"github.com/hashicorp/raft"
)

// hurrySoleVoter shortens the wait of a node that is the only voter of
// its cluster. Nobody else can lead or send it a heartbeat, yet
// hashicorp/raft waits a whole heartbeat timeout (1-2x HeartbeatTimeout:
// 1-2 s by default) before such a node elects itself, on every start and
// on a first bootstrap. Until the node leads, its heartbeat and election
// timeouts are LeaderLeaseTimeout, the shortest raft accepts (a lease
// may not outlast a heartbeat timeout); restoreTimeouts puts the
// configured values back when it leads. A node with other voters in its
// configuration waits as configured: there a short timeout would start
// needless elections.
func (h *raftHost) hurrySoleVoter() {
	f := h.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := f.Configuration().Servers
	if len(servers) != 1 || servers[0].ID != raft.ServerID(h.cfg.ID) || servers[0].Suffrage != raft.Voter {
		return
	}
	if h.cfg.LeaderLeaseTimeout >= h.cfg.HeartbeatTimeout {
		return
	}
	h.hurryMu.Lock()
	defer h.hurryMu.Unlock()
	if h.raft.State() == raft.Leader {
		return // it led before it could be hurried: restoreTimeouts has run
	}
	rc := h.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = h.cfg.LeaderLeaseTimeout, h.cfg.LeaderLeaseTimeout
	if err := h.raft.ReloadConfig(rc); err != nil {
		h.logger.Warn("could not shorten a sole voter's election wait", "err", err)
		return
	}
	h.hurried.Store(true)
}

// restoreTimeouts undoes hurrySoleVoter once the node leads: with the
// configured timeouts it waits as long as any member for a leader it
// loses (after voters join).
func (h *raftHost) restoreTimeouts() {
	h.hurryMu.Lock()
	defer h.hurryMu.Unlock()
	if !h.hurried.Swap(false) {
		return
	}
	rc := h.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = h.cfg.HeartbeatTimeout, h.cfg.ElectionTimeout
	if err := h.raft.ReloadConfig(rc); err != nil {
		h.logger.Error("could not restore the raft timeouts", "err", err)
	}
}
