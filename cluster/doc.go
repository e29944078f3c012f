// Package cluster runs an Arbiter node: raft wiring, bootstrap and join,
// leader forwarding, linearizable reads, the leader's tick, the enabled
// command set, the HTTP API and metrics. A program that runs no node is
// a client of one through package client (the public JSON API).
//
// The host knows no domain. A node serves the domains of Config.Domains
// (package domain: each brings its FSM module, routes, flags and CLI);
// it mounts their routes behind authentication and each route's access
// level, and advertises what it serves in its replicated member metadata.
// The leader enables a command only once every member serves it, refuses
// others with unavailable naming the members that lack them, and refuses
// the join of a member that lacks an enabled one (see
// fsm.Capabilities for what Apply does, and fsm.Halt for a replica that
// meets an enabled command its binary cannot apply).
//
// The parts of a node. Node composes parts with one job each (parts.go);
// every part embeds core (core.go: the configuration, logger, FSM, raft
// handle and addresses, read-only once Start has run) and reaches the
// others only through the small interfaces declared next to the parts:
//
//   - raftHost (host.go, apply.go, clock.go, catchup.go, sole_voter.go,
//     confirm.go, truncation_watch.go): opens the stores and the
//     transport, runs raft, stamps and applies commands as the leader,
//     confirms leadership for linearizable reads, sizes the log kept for
//     followers, and closes it all.
//   - commands (propose.go, read.go, forward.go, forward_batch.go): the
//     path of a command and of a read: the enabled-set gate, the leader
//     here or over its API, the retries while nothing was applied.
//   - membership (membership.go, join.go, promote.go, removal.go,
//     record.go, startcheck.go): who is a member, what Start refuses, the
//     record of the data directory, a removed member's exit.
//   - leadership (leadership.go, capabilities.go): what a leader does in
//     its term: the first entry, ticks, the enabled set, the cluster's
//     name, member upkeep and promotions.
//   - backups (backup.go): Backup, Restore and the seed of a new cluster.
//   - httpAPI (http.go: the route table; http_server.go, http_cluster.go,
//     http_changes.go, auth.go, whoami.go): serving, authentication,
//     access levels and the host's handlers.
//
// Leaf packages, which know nothing of Node: cluster/transport (the TLS
// stream layer and TLSConfig, and the guard between raft and its
// transport), cluster/memberrec (the data directory's member record),
// cluster/offline (Recover, SaveOffline, HasState: tools for a stopped
// node's data directory) and cluster/internal/hclogslog (raft's logs
// into slog).
//
// One command, from HTTP to Apply and back: POST /v1/commands reaches
// httpAPI.handleCommand (http_cluster.go) through instrument (http.go:
// authentication, access level, deadline), which calls Node.Propose;
// commands.Propose (propose.go) checks the enabled set (gate,
// capabilities.go) and calls viaLeader, which on the leader calls
// raftHost.applyLocal (apply.go: startApply stamps and hands the entry to
// raft.Apply, finishApply waits for the FSM's response), and on a
// follower forwards it (forward_batch.go) to the leader's
// /v1/internal/apply, whose handler calls startApply and finishApply
// likewise. The response returns the same way, written by writeMsgpack.
// The wire of these msgpack calls (the reply, its encoder, the
// classification of transport and HTTP failures) is internal/rawwire,
// shared with internal/rawremote, the raw Propose/Query client the
// repository's own tests and bench use; embedders use package client.
//
// A host program embeds a node like this:
//
//	cfg := cluster.DefaultConfig()
//	cfg.ID, cfg.DataDir = "n1", "/var/lib/arbiter"
//	cfg.RaftAddr, cfg.HTTPAddr = "10.0.0.1:7000", "10.0.0.1:8000"
//	cfg.Bootstrap = true // first node only; others set Join (a node with state ignores both)
//	cfg.Domains = builtin.Domains()
//	node, err := cluster.New(cfg)
//	if err != nil { ... }
//	if err := node.Start(ctx); err != nil { ... }
//	defer node.Shutdown(context.Background())
//	nc := nodes.On(node)
//
// Membership (membership.go, join.go, promote.go, startcheck.go, record.go,
// removal.go). Raft's configuration says who is a member and who votes;
// replicated metadata adds API addresses and capabilities; the data
// directory's record (member.json) says which member and cluster it
// belongs to. A cluster is named when it is bootstrapped (fsm.CmdClusterID).
// A new member joins as a non-voter, and the leader promotes it once it
// has caught up, so a member that never starts never counts toward
// quorum. The leader refuses a join of an id that is a member with other
// addresses (unless Replace: the old member is removed, the new process
// joins as a non-voter), of another member's address, and of a process
// without data claiming a voter's id and address. Start refuses, before
// raft runs: no state and neither Bootstrap, Join nor AwaitJoin (nothing
// is created); another member's data directory; a member removed from the
// configuration it holds; addresses other than the recorded ones without
// ChangeAddress (with it, the leader moves the member); a Join naming
// another cluster. A member that finds itself removed or replaced stops,
// and Done and Err say so.
//
// Recovery from quorum loss is offline (package cluster/offline): Recover
// rewrites the stored configuration of a stopped node
// (raft.RecoverCluster) so that the survivors form a smaller cluster;
// SaveOffline writes a stopped node's state as a backup; Config.Restore
// seeds a new cluster from one.
//
// Requests may carry a deadline (timeout_ms, Request-Timeout; see
// deadline.go); without one they wait up to ApplyTimeout.
//
// Node implements fsm.Proposer and fsm.Reader. Any node accepts any call:
// a follower forwards writes, and linearizable reads, to the leader over
// the leader's HTTP API. While no leader is known a call retries until its
// context ends and then fails with errs.Unavailable.
//
// Outcomes. A write either returns its result (the command is in the log and
// applied), a domain error inside the result (decided, nothing changed), or
// an error. An error with errs.IsOutcomeUnknown may or may not have been
// applied: retry it with the same idempotency key. Other errors mean the
// command was not applied.
//
// Reads are linearizable by default: the leader serves them only after it
// has committed an entry of its current term, confirmed its leadership with
// a quorum (VerifyLeader), and applied everything committed when the read
// began; concurrent reads share one confirmation that started after all of
// them. Stale reads are served from local state; over HTTP they carry how
// stale they may be (HeaderAppliedIndex, HeaderLeaderContact,
// HeaderCaughtUp).
//
// Readiness (ready.go, /readyz, Node.Ready, client's Cluster.Ready). A node is ready
// once it knows a leader, has applied what it knows to be committed and
// what the leader had committed when the node started (startMark: a
// restarted node's own commit index is 0 until replication reaches it),
// and the cluster enables every command the caller requires
// (?require=capacity.acquire,workitem.submit; a client checks it before
// its first command).
//
// Backups. Node.Backup (GET /v1/cluster/snapshot, `arbiter snapshot save`)
// streams the whole state from the leader after a read barrier; the stream
// checks itself (fsm.FSM.InspectSnapshot, `arbiter snapshot inspect`).
// Node.Restore (POST /v1/cluster/restore) checks a whole backup before
// changing anything, then replaces the state on every replica through
// raft's user restore, keeping the cluster's members, index and clock and
// expiring every change-feed cursor. Both are admin operations.
package cluster
