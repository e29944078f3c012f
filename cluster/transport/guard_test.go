package transport

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// Raft gets no AppendEntries pipeline through the guard, whatever the
// transport offers (the in-memory one offers one): it replicates with
// plain RPCs, which cannot deadlock the way netPipeline can.
func TestGuardOffersNoPipeline(t *testing.T) {
	_, inmem := raft.NewInmemTransport("a")
	_, peer := raft.NewInmemTransport("b")
	inmem.Connect("b", peer)
	if p, err := inmem.AppendEntriesPipeline("b", "b"); err != nil || p == nil {
		t.Fatalf("the in-memory transport offers no pipeline (%v): the test proves nothing", err)
	}
	guarded, g := NewGuard(inmem)
	defer g.Shut()
	if _, err := guarded.AppendEntriesPipeline("b", "b"); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("guarded transport: %v, want ErrPipelineReplicationNotSupported", err)
	}
}
