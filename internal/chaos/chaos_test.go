package chaos_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/chaos"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/linearizability"
	"github.com/arbiterhq/arbiter/internal/nodehooks"
	"github.com/arbiterhq/arbiter/internal/seed"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/go-memdb"
)

// TestFaults runs every workload on a 3-node cluster through every fault
// kind once (or the seeded selection its FaultsPerRun asks for), in a
// seeded order.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	for _, w := range workloads {
		t.Run(w.Name(), func(t *testing.T) {
			seed := seed.For(t)
			faults := chaos.Schedule(seed)
			// A workload may take a seeded selection of the faults, to
			// keep the suite's time; across runs it meets every kind.
			if s, ok := w.(interface{ FaultsPerRun() int }); ok && s.FaultsPerRun() < len(faults) {
				faults = faults[:s.FaultsPerRun()]
			}
			run(t, chaos.Config{Workload: w, Seed: seed, Faults: faults})
		})
	}
}

// TestFaultsFiveNodes runs the node primitives on 5 nodes, where a
// minority is two nodes and the leader's minority has a follower in it.
func TestFaultsFiveNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	seed := seed.For(t)
	run(t, chaos.Config{Workload: chaos.Nodes{}, Nodes: 5, Seed: seed, Faults: chaos.Schedule(seed)})
}

// TestFaultsTCP runs the node primitives, concepts, capacity, host
// resource reservation and the fenced sink through every fault (the
// reservation workload through a seeded selection, as in TestFaults)
// with raft on loopback TCP: raft's NetworkTransport, its connection pool
// and its heartbeat fast path (where hashicorp/raft#695 lives), instead
// of the in-memory transport.
func TestFaultsTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	for _, w := range []chaos.Workload{chaos.Nodes{}, chaos.NewConcepts(), chaos.NewCapacity(), chaos.NewReservations(), chaos.NewFencedSink(true)} {
		t.Run(w.Name(), func(t *testing.T) {
			seed := seed.For(t)
			faults := chaos.Schedule(seed)
			if s, ok := w.(interface{ FaultsPerRun() int }); ok && s.FaultsPerRun() < len(faults) {
				faults = faults[:s.FaultsPerRun()]
			}
			run(t, chaos.Config{Workload: w, TCP: true, Seed: seed, Faults: faults})
		})
	}
}

// The controls: the same harness, with a deliberate bug, must fail. A
// check that passes a broken system proves nothing about a correct one.

// Without fence checks the sink loses acknowledged writes, and the
// harness reports it.
func TestUnfencedSinkLosesWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	failures := runCapturing(t, chaos.Config{Workload: chaos.NewFencedSink(false), Seed: seed.For(t), Warmup: 60})
	if !containsAll(failures, "acknowledged writes lost") {
		t.Fatalf("the harness did not catch lost writes of an unfenced sink; it reported %q", failures)
	}
}

// Reads from the local replica are not linearizable once a partition
// separates a follower from a leader that keeps writing; porcupine must
// say so.
func TestHarnessCatchesStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	var faults []chaos.Fault
	for _, f := range chaos.Faults {
		if f.Name == "partition-minority" || f.Name == "delay" {
			faults = append(faults, f, f)
		}
	}
	failures := runCapturing(t, chaos.Config{Workload: chaos.Nodes{StaleReads: true}, Seed: seed.For(t), Faults: faults})
	if !containsAll(failures, "NOT linearizable") {
		t.Fatalf("porcupine did not catch stale reads; the harness reported %q", failures)
	}
}

// The same with status reads of capacity cells and gets of concept claims
// served from the local replica: porcupine must catch each.
func TestHarnessCatchesStaleCapacityAndConceptReads(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	var faults []chaos.Fault
	for _, f := range chaos.Faults {
		if f.Name == "partition-minority" || f.Name == "delay" {
			faults = append(faults, f, f)
		}
	}
	capacity, concepts := chaos.NewCapacity(), chaos.NewConcepts()
	capacity.StaleReads, concepts.StaleReads = true, true
	for _, w := range []chaos.Workload{capacity, concepts} {
		t.Run(w.Name(), func(t *testing.T) {
			failures := runCapturing(t, chaos.Config{Workload: w, Seed: seed.For(t), Faults: faults})
			if !containsAll(failures, "NOT linearizable") {
				t.Fatalf("porcupine did not catch stale reads; the harness reported %q", failures)
			}
		})
	}
}

// A fault that claims to cut the leader off and does not is caught.
func TestHarnessCatchesAFaultThatCutsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	// The fault cuts nothing, so the takeover wait always runs out: 5 s
	// is ample for an election that would happen, and saves CI 15 s.
	failures := runCapturing(t, chaos.Config{Workload: chaos.Nodes{}, Seed: seed.For(t), Faults: []chaos.Fault{chaos.BrokenIsolation()},
		TakeoverBound: 5 * time.Second})
	if !containsAll(failures, "did not cut") {
		t.Fatalf("the takeover check did not fire; the harness reported %q", failures)
	}
}

// A leader that stamps commands from its wall clock, five hours ahead,
// moves FSM time by five hours, and every lease would expire at once: the
// clock check must catch it. (With the monotonic stamps of production the
// same fault passes in every TestFaults run.)
func TestHarnessCatchesAWallClockLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	failures := runCapturing(t, chaos.Config{Workload: wallClockNodes{}, Seed: seed.For(t), Faults: []chaos.Fault{chaos.SkewedLeader(5 * time.Hour)}})
	if !containsAll(failures, "FSM time ran ahead of real time") {
		t.Fatalf("the clock check did not fire; the harness reported %q", failures)
	}
}

// wallClockNodes is the node primitives on nodes that stamp commands from
// their wall clocks (nodehooks.Hooks.StampsFromWallClock).
type wallClockNodes struct{ chaos.Nodes }

func (wallClockNodes) Configure(_ testing.TB, _ int, cfg *cluster.Config) {
	nodehooks.Edit(cfg, func(h *nodehooks.Hooks) { h.StampsFromWallClock = true })
}

// A replica that diverges is caught: one node's module writes its own
// index where its peers write theirs, for the same command.
func TestHarnessCatchesDivergence(t *testing.T) {
	tb := &capturingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := clustertest.New(tb, clustertest.Options{Domains: func(i int) []domain.Domain {
			return append(builtin.Domains(), skewDomain(i))
		}})
		leader := c.Node(c.WaitLeader(10 * time.Second))
		if _, err := fsm.Submit(context.Background(), leader, log.Command{Type: cmdSkew}, struct{}{}, nil); err != nil {
			tb.Fatalf("skew: %v", err)
		}
		c.WaitConverged(10 * time.Second)
	}()
	<-done
	if !containsAll(tb.failures(), "diverged") {
		t.Fatalf("the divergence check did not fire; it reported %q", tb.failures())
	}
}

const cmdSkew log.Type = 995

// skewDomain is a broken domain: node i's handler stores i, so replicas
// of the same log differ. Its tables and commands are the same on every
// node, so the cluster enables it.
func skewDomain(i int) domain.Domain {
	type row struct {
		ID   string `msgpack:"id"`
		Node int    `msgpack:"node"`
	}
	return domain.Domain{Name: "skew", Module: func() fsm.Module {
		return fsm.Module{Name: "skew", Types: fsm.TypeRange{First: uint16(cmdSkew), Last: uint16(cmdSkew)},
			Tables: []fsm.Table{{New: func() any { return new(row) }, Schema: &memdb.TableSchema{
				Name:    "skew",
				Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}}},
			}}},
			Commands: []fsm.CommandSpec{{Type: cmdSkew, Name: "skew", MaxVersion: 1, Apply: func(tx *fsm.Tx, _ *log.Command) (any, error) {
				return nil, tx.Insert("skew", &row{ID: "x", Node: i})
			}}},
		}
	}}
}

// runCapturing runs cfg with a testing.TB that records failures instead
// of failing t, and returns them.
//
// The failures it expects write porcupine's pages; they go to the test's
// own temporary directory, removed when it ends.
func runCapturing(t *testing.T, cfg chaos.Config) []string {
	t.Setenv(linearizability.VisualizationDirEnv, t.TempDir())
	c := &capturingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		chaos.Run(c, cfg)
	}()
	<-done
	return c.failures()
}

type capturingTB struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (c *capturingTB) Helper() {}

func (c *capturingTB) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.TB.Logf("(expected failure) %s", msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msg)
}

// Fatalf records and ends the run's goroutine, as testing's does.
func (c *capturingTB) Fatalf(format string, args ...any) {
	c.Errorf(format, args...)
	runtime.Goexit()
}

func (c *capturingTB) failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

func containsAll(msgs []string, sub string) bool {
	for _, m := range msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}
