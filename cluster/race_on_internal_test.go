//go:build race

package cluster

// raceEnabled says the race detector runs: its sync.Pool drops a
// quarter of what is put back, on purpose, so counts of allocations
// that a pool saves are not the build's.
const raceEnabled = true
