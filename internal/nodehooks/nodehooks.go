// Package nodehooks bends a cluster node in ways no production
// configuration may: a skewed wall clock, a fault guard switched off, the
// old skew-prone time stamps. They exist for the fault harness's controls
// (the checks must be seen to fire) and for clock tests, and they are not
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
	// StaleSnapshotGuardOff lets a stale InstallSnapshot reach raft (see
	// cluster/stale_snapshot.go): for the control that shows the fault
	// harness's rewind check fires.
	StaleSnapshotGuardOff bool
	// StampsFromWallClock makes a leader stamp commands with its wall
	// clock, as nodes did before FSM time followed the monotonic clock:
	// for the control that shows the fault harness's clock check fires
	// when a skewed leader moves FSM time.
	StampsFromWallClock bool
}

// Edit changes the hooks of cfg, a *cluster.Config, before the node is
// made with it. Set by package cluster at init; nil until it is linked.
var Edit func(cfg any, edit func(*Hooks))
