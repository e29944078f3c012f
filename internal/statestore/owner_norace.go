//go:build !race

package statestore

// ownerCheck is off outside race builds: see owner_race.go.
const ownerCheck = false

func goroutineID() uint64 { return 0 }
