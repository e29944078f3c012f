// Package clustertest is a test kit for programs that embed Arbiter, as
// net/http/httptest is for HTTP: it starts an N-node cluster inside a Go
// test over loopback, injects the faults a multi-host deployment meets,
// and records histories of the program's own operations for a
// linearizability check with porcupine (github.com/anishathalye/porcupine).
//
// Start a cluster bound to a test with New; it stops with the test:
//
//	c := clustertest.New(t, clustertest.Options{Nodes: 3})
//	remote := c.Remote() // a raw client over every node's API
//	locks := nodes.On(remote)
//	api, _ := client.New(c.URLs()) // package client, as another host would
//
// or, outside a test (an Example, a tool), with Start and Close.
//
// Faults act on the traffic between nodes (raft, and the HTTP calls
// followers forward to the leader): Partition, Isolate and Heal cut
// links; Pause and Resume freeze a node's traffic as a long GC pause or
// SIGSTOP would; Delay slows every message; Kill stops a node at once and
// Restart starts it again on its data; TransferLeadership moves the
// leader. A client's own calls to a node's API are not cut: a client of
// an isolated node reaches it, and learns what a client of a minority
// learns (unavailable, or an outcome it cannot know).
//
// Time. Advance moves every node's clock forward and waits until every
// running node applied the new FSM time, so a test of leases, claims or
// windows that expire passes their deadline without sleeping; MoveClock
// only moves the clocks (the next command carries the time).
//
// Histories. Record each call of your own operations with History.Call
// just before it and Op.Return with its decided output after it (or
// Op.Fail with its error), then check the history against a
// porcupine.Model of your operations with Check. A write whose outcome is
// unknown (a timeout, a leader change: errs.IsOutcomeUnknown) stays in
// the history as UnknownOutput, and the model must accept it as if it
// had been applied (IsUnknown). The Example shows a lock service checked
// under a partition.
//
// The package is a facade over the harness Arbiter's own tests use; its
// API is kept stable. Every node keeps its log in files under a
// temporary directory and runs with fsync off (a test cluster, never a
// durable one), with timeouts short enough for failover in a test.
package clustertest
