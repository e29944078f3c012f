package chaos_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"

	"github.com/arbiterhq/arbiter/internal/chaos"
	"github.com/arbiterhq/arbiter/internal/seed"
)

// minCheckedHistories is how many histories one run of this package must
// have porcupine check and find linearizable: the reliability issue asks
// CI for at least 20. TestMain fails the package if a full run (no -run,
// no -skip, no -short) checked fewer, so that a workload losing its model
// or a test losing its runs cannot silently lower the count.
const minCheckedHistories = 20

// checkedHistories counts the histories run (below) saw porcupine check.
var checkedHistories atomic.Int64

// run is chaos.Run, counting the history if porcupine checked it (see
// chaos.Report.Checked). The controls, whose histories must fail, call
// chaos.Run through runCapturing and are not counted.
func run(t *testing.T, cfg chaos.Config) chaos.Report {
	t.Helper()
	r := chaos.Run(t, cfg)
	if r.Checked {
		checkedHistories.Add(1)
	}
	return r
}

func TestMain(m *testing.M) {
	code := m.Run()
	if n := checkedHistories.Load(); code == 0 && fullRun() {
		if n < minCheckedHistories {
			fmt.Printf("FAIL: porcupine checked %d histories in this run of internal/chaos, want at least %d (see minCheckedHistories)\n", n, minCheckedHistories)
			code = 1
		} else {
			fmt.Printf("chaos: porcupine checked %d histories (at least %d required)\n", n, minCheckedHistories)
		}
	}
	os.Exit(code)
}

// fullRun says every test of the package was asked to run.
func fullRun() bool {
	if testing.Short() {
		return false
	}
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// checkedWorkloads are the workloads with a porcupine model (the others,
// reservation, the fenced sink and projection, check themselves in
// Verify), each made fresh for every history.
var checkedWorkloads = []func() chaos.Workload{
	func() chaos.Workload { return chaos.Nodes{} },
	func() chaos.Workload { return chaos.NewConcepts() },
	func() chaos.Workload { return chaos.NewCapacity() },
	func() chaos.Workload { return chaos.NewAllocation() },
	func() chaos.Workload { return chaos.NewWorkItems() },
}

// shortHistories is how many histories TestCheckedHistories runs: with
// the 9 of TestFaults, TestFaultsFiveNodes and TestFaultsTCP that
// porcupine checks, the package checks minCheckedHistories.
const shortHistories = 11

// TestCheckedHistories runs short histories of the workloads porcupine
// checks, each on a fresh 3-node cluster with one or two faults drawn by
// its seed (raft over TCP in about a third of them), so that one run of
// the suite checks many histories and not only the few long ones of
// TestFaults. Each history must be checked: a workload whose history
// porcupine did not check fails here.
func TestCheckedHistories(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	for i := range shortHistories {
		w := checkedWorkloads[i%len(checkedWorkloads)]()
		t.Run(fmt.Sprintf("%02d-%s", i+1, w.Name()), func(t *testing.T) {
			seed := seed.For(t)
			rng := rand.New(rand.NewPCG(seed, 4))
			faults := chaos.Schedule(seed)[:1+rng.IntN(2)]
			tcp := rng.IntN(3) == 0
			t.Logf("raft over %s", map[bool]string{false: "the in-memory transport", true: "loopback TCP"}[tcp])
			r := run(t, chaos.Config{Workload: w, TCP: tcp, Seed: seed, Faults: faults})
			if !r.Checked && !t.Failed() {
				t.Errorf("porcupine did not check the history of %s: the workload has no model", w.Name())
			}
		})
	}
}
