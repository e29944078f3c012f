//go:build !race

package cluster

// raceEnabled says the race detector runs (see race_on_internal_test.go).
const raceEnabled = false
