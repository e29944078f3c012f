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
func (n *Node) hurrySoleVoter() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	servers := f.Configuration().Servers
	if len(servers) != 1 || servers[0].ID != raft.ServerID(n.cfg.ID) || servers[0].Suffrage != raft.Voter {
		return
	}
	if n.cfg.LeaderLeaseTimeout >= n.cfg.HeartbeatTimeout {
		return
	}
	n.hurryMu.Lock()
	defer n.hurryMu.Unlock()
	if n.raft.State() == raft.Leader {
		return // it led before it could be hurried: restoreTimeouts has run
	}
	rc := n.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.LeaderLeaseTimeout, n.cfg.LeaderLeaseTimeout
	if err := n.raft.ReloadConfig(rc); err != nil {
		n.logger.Warn("could not shorten a sole voter's election wait", "err", err)
		return
	}
	n.hurried.Store(true)
}

// restoreTimeouts undoes hurrySoleVoter once the node leads: with the
// configured timeouts it waits as long as any member for a leader it
// loses (after voters join).
func (n *Node) restoreTimeouts() {
	n.hurryMu.Lock()
	defer n.hurryMu.Unlock()
	if !n.hurried.Swap(false) {
		return
	}
	rc := n.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.HeartbeatTimeout, n.cfg.ElectionTimeout
	if err := n.raft.ReloadConfig(rc); err != nil {
		n.logger.Error("could not restore the raft timeouts", "err", err)
	}
}
