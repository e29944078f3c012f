// Package transport is what stands between a node's raft and the network:
// the mutual-TLS stream layer (TLSConfig, NewTLSStreamLayer) and the
// Guard, which wraps raft's transport against hazards of hashicorp/raft
// (heartbeats at shutdown, stale snapshots, stale tails, the pipeline's
// wedge, see Guard and pipeline.go; the pipeline is off unless
// SetPipeline turns it on) and records what the leader's RPCs say of each
// follower (Peers) and what a restarted node must apply before it is
// ready (StartIndex).
//
// It knows nothing of nodes, members or the HTTP API: package cluster
// builds a node on it.
package transport
