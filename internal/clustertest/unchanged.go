package clustertest

import (
	"slices"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
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
	hash := func() fsm.Hashes {
		_, h, err := c.Node(c.WaitLeader(20 * time.Second)).FSM().StateHashes()
		if err != nil {
			t.Fatalf("clustertest: content hash: %v", err)
		}
		return h
	}
	before := hash()
	do()
	if after := hash(); after.Content != before.Content {
		t.Errorf("%s changed the replicated state (content hash %x, was %x; tables that changed: %v)",
			what, after.Content, before.Content, changedTables(before, after))
	}
}

// changedTables names the tables whose hashes differ between a and b,
// the FSM's bookkeeping row (meta) aside, sorted.
func changedTables(a, b fsm.Hashes) []string {
	var names []string
	for name, h := range b.Tables {
		if name != "meta" && a.Tables[name] != h {
			names = append(names, name)
		}
	}
	for name := range a.Tables {
		if _, ok := b.Tables[name]; !ok && name != "meta" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
