// Package nodehooks bends a cluster node in ways no production
// configuration may: a skewed wall clock, a clock a test moves forward, a
// fault guard switched off, the old skew-prone time stamps. They exist for
// the fault harness's controls (the checks must be seen to fire), for clock
// tests, and for expiry tests that advance time instead of sleeping
// (internal/clustertest's Advance), and they are not
// part of cluster.Config's public surface: only packages of this module
// can import an internal package, so no embedding program can set them.
//
// Package cluster imports this one and installs Edit at init (this
// package cannot import cluster: the import would run in a circle), the
// way gRPC's internal package reaches unexported settings.
package nodehooks

import "time"

// Hooks are a node's test switches. The zero value is production.
type Hooks struct {
	// WallClock replaces time.Now where the node reads the wall clock
	// (only to start FSM time in a new cluster, and in the skew checks),
	// so a test can give a node a skewed clock.
	WallClock func() time.Time
	// Clock replaces time.Now where the node counts FSM time: the
	// monotonic clock a leader stamps commands from, and reads when it
	// applies an entry (see cluster/clock.go). A clock that jumps d ahead
	// moves FSM time d ahead with the next command the node stamps as
	// leader, and a TTL expires without the test waiting for it. It must
	// never go back, and every node of a cluster must move alike (a node
	// whose clock runs ahead of its peers' moves FSM time only while it
	// leads).
	Clock func() time.Time
	// StaleSnapshotGuardOff lets a stale InstallSnapshot reach raft (see
	// cluster/stale_snapshot.go): for the control that shows the fault
	// harness's rewind check fires.
	StaleSnapshotGuardOff bool
	// StampsFromWallClock makes a leader stamp commands with its wall
	// clock, as nodes did before FSM time followed the monotonic clock:
	// for the control that shows the fault harness's clock check fires
	// when a skewed leader moves FSM time.
	StampsFromWallClock bool
	// HoldApply, if set, is called before the node applies each batch
	// of committed entries: a test blocks in it to make the node lag
	// behind the log while it stays in contact with the leader (its raft
	// keeps storing entries and answering heartbeats until raft's apply
	// queue fills; a test holds it for a few entries only).
	HoldApply func()
	// RestoreDelay, if set, is added to every snapshot restore of the
	// node (counted in its measured restore time): a restore as slow as
	// a large state's, at a test's small scale, whatever the machine's
	// speed (the catch-up test's control needs restores slower than the
	// leader's compaction).
	RestoreDelay time.Duration
}

// Edit changes the hooks of cfg, a *cluster.Config, before the node is
// made with it. Set by package cluster at init; nil until it is linked.
var Edit func(cfg any, edit func(*Hooks))
