package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/chaos"
	"github.com/arbiterhq/arbiter/internal/seed"
)

// TestSoak runs histories until ARBITER_SOAK has passed, each on a fresh
// cluster of 3 or 5 nodes, raft in memory or over TCP, with a random
// workload and a random fault schedule, and reports the totals (RELIABILITY.md records the last
// ones). Skipped unless ARBITER_SOAK is set:
//
//	ARBITER_SOAK=30m go test -run TestSoak -timeout 0 -v ./internal/chaos
//
// With ARBITER_SOAK_CHECKED=1 it draws only the workloads porcupine checks.
func TestSoak(t *testing.T) {
	d, soak, err := chaos.SoakDuration()
	if err != nil {
		t.Fatal(err)
	}
	if !soak {
		t.Skipf("set %s to a duration to soak", chaos.SoakEnv)
	}
	pool := workloads
	if only, err := chaos.SoakOnlyChecked(); err != nil {
		t.Fatal(err)
	} else if only {
		pool = nil
		for _, w := range workloads {
			if _, ok := w.Model(); ok {
				pool = append(pool, w)
			}
		}
		t.Logf("soak: only the %d workloads with a model (%s=1)", len(pool), chaos.SoakCheckedEnv)
	}
	seed := seed.For(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	t.Logf("soak for %v, seed %d", d, seed)
	var total chaos.Report
	histories, failed, tcpRuns, checked := 0, 0, 0, 0
	kinds := map[string]int{}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		histories++
		w := pool[rng.IntN(len(pool))]
		nodes := 3 + 2*rng.IntN(2)
		tcp := rng.IntN(2) == 1
		hseed := rng.Uint64()
		name := fmt.Sprintf("%03d-%s-%dn-%s-seed%d", histories, w.Name(), nodes, map[bool]string{false: "inmem", true: "tcp"}[tcp], hseed)
		t.Run(name, func(t *testing.T) {
			// Deferred: a run that stops with t.Fatal counts too.
			defer func() {
				if t.Failed() {
					failed++
				}
			}()
			r := run(t, chaos.Config{Workload: w, Nodes: nodes, TCP: tcp, Seed: hseed, Faults: chaos.RandomSchedule(hseed)})
			if tcp {
				tcpRuns++
			}
			if r.Checked {
				checked++
			}
			total.Operations += r.Operations
			total.Decided += r.Decided
			total.Unknown += r.Unknown
			total.Writes += r.Writes
			for _, f := range r.Faults {
				kinds[f]++
			}
			total.Faults = append(total.Faults, r.Faults...)
		})
	}
	t.Logf("soak: %d histories (%d over TCP, %d checked by porcupine and linearizable) in %v (seed %d): %d operations (%d decided, %d unknown), %d writes, %d faults %v; %d histories with a violation",
		histories, tcpRuns, checked, d, seed, total.Operations, total.Decided, total.Unknown, total.Writes, len(total.Faults), kinds, failed)
}
