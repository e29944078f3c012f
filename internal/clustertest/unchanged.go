package clustertest

import (
	"testing"
	"time"
)

// Unchanged runs do, which must change nothing (a refused request), and
// fails t if it did: the leader's content hash (its state without the
// applied index and the clock, see fsm.FSM.ContentHash) must be the same
// before and after. A request is answered only once the leader has
// applied whatever it proposed, so the hash after do includes it. Ticks
// advance the index and the clock only, unless they have something to
// expire or prune: keep TTLs in such tests longer than the test.
func (c *Cluster) Unchanged(t testing.TB, what string, do func()) {
	t.Helper()
	hash := func() string {
		h, err := c.Node(c.WaitLeader(20 * time.Second)).ContentHash()
		if err != nil {
			t.Fatalf("clustertest: content hash: %v", err)
		}
		return h
	}
	before := hash()
	do()
	if after := hash(); after != before {
		t.Errorf("%s changed the replicated state (content hash %s, was %s)", what, after, before)
	}
}
