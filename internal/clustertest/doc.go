// Package clustertest runs N-node Arbiter clusters inside one test process,
// with fault injection.
//
// Raft traffic goes over hashicorp/raft's InmemTransport, or with
// Options.TCP over its NetworkTransport on loopback TCP through a stream
// layer that injects the same faults; the HTTP API, which followers use to
// forward to the leader, goes over loopback TCP through a dialer that
// honours the same partitions.
// Every node keeps its raft log in boltdb files under the test's temp dir,
// so a stopped node restarts on its own data.
//
// Nodes join as non-voters and are promoted once caught up: New, Replace
// and WaitVoters return once every running node votes. A restarted node
// keeps its raft and API addresses (its data directory records them).
//
// Faults: Partition, Isolate and Heal; CutOneWay; Delay; Pause and Resume;
// Stop and Restart; TransferLeadership and TransferLeadershipTo;
// SkewClock (a wall clock hours off); Replace (a membership change);
// Snapshot. DataDir lets a test work on a stopped node's files (a
// recovery, say). internal/chaos composes them into the named faults of the
// fault harness.
//
// Time (clock.go): Advance moves every node's clock forward and waits
// until every running node has applied the new FSM time (the leader's
// next tick carries it); MoveClock only moves the clocks, for a cluster
// that does not tick, where the test's next command carries it. Expiry
// tests use them to pass a deadline instead of sleeping until it.
//
// A Cluster is bound to a testing.TB: it fails the test on setup errors and
// stops every node in t.Cleanup.
package clustertest
