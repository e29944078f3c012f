package projection_test

import (
	"flag"
	"os"
	"testing"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/projection"
)

// Module() is a description and nothing more: calling it (as domain.Check
// does before the flags are parsed, and again to compose the FSM) creates
// no file and no directory under the runtime root, and builds no writer
// that would keep the root as it was then. The root the flags name later
// is the one the node writes under.
func TestModuleHasNoSideEffects(t *testing.T) {
	root := t.TempDir()
	d := projection.Domain()
	if err := domain.Check([]domain.Domain{d}); err != nil { // calls Module()
		t.Fatal(err)
	}
	d.Module()
	d.Module()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	d.Flags(fs)
	if err := fs.Parse([]string{"--projection-root", root}); err != nil {
		t.Fatal(err)
	}
	if err := d.Load(); err != nil {
		t.Fatal(err)
	}
	m := d.Module()
	if left, err := os.ReadDir(root); err != nil || len(left) != 0 {
		t.Fatalf("Module() left %v in the runtime root (%v)", left, err)
	}

	l, err := fsmtest.New(m)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, l: l, s: projection.NewService(l, l), root: root}
	e.setTTL(60_000)
	id := e.target("route")
	if _, err := e.submit(router, id, projection.ChannelComputedRoute, 1, map[string]any{"r": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.submit(frontier, id, projection.ChannelLifecycleFrontier, 1, map[string]any{"f": 1}); err != nil {
		t.Fatal(err)
	}
	lease := e.acquire(id)
	if _, err := e.s.Publish(as(agent), fenceOf(lease)); err != nil {
		t.Fatal(err)
	}
	if _, err := readCurrent(e, id); err != nil {
		t.Fatalf("the publish wrote no file under the root the flags named: %v", err)
	}
}
