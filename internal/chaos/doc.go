// Package chaos runs Arbiter's fault harness: concurrent clients of one
// module on an in-process cluster (internal/clustertest) while faults are
// injected one after another, then three checks that could each catch a
// real bug:
//
//   - the recorded history is linearizable against the module's sequential
//     model (porcupine, via internal/linearizability); operations whose
//     outcome is unknown stay in the history as "maybe applied";
//   - after the last fault heals, every replica reaches the same applied
//     index with the same state hash (no divergence);
//   - the workload's own invariants hold on every replica's local state
//     (for capacity: usage equals the sum of active leases and never
//     exceeds capacity; for the fenced sink: no acknowledged write lost or
//     duplicated).
//
// Run starts its own cluster; NewCluster and RunOn split that, for a test
// that must bring the cluster into some state first (the recovery test of
// cmd/arbiter runs the harness on a cluster recovered from quorum loss).
//
// Adding a module is a Workload (a model, a client step, a final check)
// and one line in the table of workloads_test.go; every fault in Faults then
// runs against it. RELIABILITY.md at the repository root says what is
// injected, what is checked and how to run the long soak (ARBITER_SOAK).
package chaos
