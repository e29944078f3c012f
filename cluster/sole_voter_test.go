package cluster_test

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/hashicorp/raft"
)

// TestSoleVoterElectsItselfWithoutAHeartbeatTimeout: with a 30 s heartbeat
// timeout, raft alone would keep a single-node cluster without a leader
// for 30-60 s after bootstrap and after every restart. The node leads
// well within that, and then runs with the configured timeouts again.
func TestSoleVoterElectsItselfWithoutAHeartbeatTimeout(t *testing.T) {
	const heartbeat = 30 * time.Second
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(i int, cfg *cluster.Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = heartbeat, heartbeat, 100*time.Millisecond
	}})
	check := func(when string) {
		t.Helper()
		c.WaitLeader(15 * time.Second) // fails the test if no leader by then
		// The timeouts are put back by the leadership watcher, just after
		// raft reports the node leads: give it a moment, far below the
		// 30 s a not-hurried node would have waited.
		var rc raft.ReloadableConfig
		restored := c.Eventually(5*time.Second, func() bool {
			rc = c.Node(0).Raft().ReloadableConfig()
			return rc.HeartbeatTimeout == heartbeat && rc.ElectionTimeout == heartbeat
		})
		if !restored {
			t.Fatalf("%s, the leader runs with heartbeat %v and election %v; want the configured %v",
				when, rc.HeartbeatTimeout, rc.ElectionTimeout, heartbeat)
		}
	}
	check("after bootstrap")
	c.Stop(0)
	c.Restart(0)
	check("after a restart")
}

// TestVotersWithPeersKeepTheirTimeouts: a node with other voters is not
// hurried; a short timeout there would start needless elections.
func TestVotersWithPeersKeepTheirTimeouts(t *testing.T) {
	const heartbeat = 700 * time.Millisecond
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(i int, cfg *cluster.Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = heartbeat, heartbeat, 100*time.Millisecond
	}})
	c.WaitLeader(15 * time.Second)
	c.Stop(1)
	c.Restart(1)
	c.WaitLeader(15 * time.Second)
	for i := range 3 {
		rc := c.Node(i).Raft().ReloadableConfig()
		if rc.HeartbeatTimeout != heartbeat || rc.ElectionTimeout != heartbeat {
			t.Errorf("node %d runs with heartbeat %v and election %v; configured %v", i, rc.HeartbeatTimeout, rc.ElectionTimeout, heartbeat)
		}
	}
}
