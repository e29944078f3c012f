package chaos_test

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/chaos"
)

// TestFaults runs every workload on a 3-node cluster through every fault
// kind once, in a seeded order.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault harness; skipped with -short")
	}
	for _, w := range workloads {
		t.Run(w.Name(), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			chaos.Run(t, chaos.Config{Workload: w, Seed: seed, Faults: chaos.Schedule(seed)})
		})
	}
}
