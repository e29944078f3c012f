package transport

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// By default raft gets no AppendEntries pipeline through the guard,
// whatever the transport offers (the in-memory one offers one): it
// replicates with plain RPCs. SetPipeline(true) offers the transport's,
// behind the guard's wrapper (pipeline.go).
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
	g.SetPipeline(true)
	p, err := guarded.AppendEntriesPipeline("b", "b")
	if err != nil || p == nil {
		t.Fatalf("guarded transport with the pipeline on: %v", err)
	}
	defer p.Close()
	if fmt.Sprintf("%T", p) != "*transport.guardedPipeline" {
		t.Fatalf("guarded transport with the pipeline on handed raft a %T, want the guard's wrapper", p)
	}
}
