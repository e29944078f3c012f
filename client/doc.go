// Package client is the Go client of an Arbiter cluster: typed services
// of every domain over the cluster's public JSON HTTP API (/v1/...),
// for a program that runs no node and links no server code.
//
// # The decision: own wire types over the public JSON API
//
// The client carries its own request and result types and speaks the
// same JSON API as the Python client (clients/python), curl and the
// MCP tools, as Consul's api module does. It does not import the domain
// packages, and the domains' types did not move to light packages,
// because:
//
//   - the domain packages hold their FSM handlers (the state store, the
//     replicated tables) beside their request types: importing one links
//     the server;
//   - the JSON API is the contract every other client speaks: one wire
//     surface to keep stable, documented once;
//   - the server stays free to change its internal msgpack commands
//     (what the repository's own raw client, internal/rawremote,
//     proposes in tests and the bench) without breaking a client.
//
// It replaced cluster.Remote, which is gone: the core commands of the
// arbiter binary (status, member, node, watch, snapshot, endpoint) are
// built on it too.
//
// Drift is caught by tests: every service is exercised against a real
// cluster (cluster/clustertest), and a test compares the JSON field
// names of each client type with those of the domain type it mirrors
// (reflection over json tags, nested types included), so a field added
// on one side fails the test.
//
// # The dependency rule
//
// Non-test files import the standard library,
// github.com/arbiterhq/arbiter/errs and github.com/arbiterhq/arbiter/retry
// only (both light): never hashicorp/raft, its stores, bbolt, go-memdb,
// btree, cobra or prometheus, nor the module's log, fsm, cluster or
// domain packages. TestClientLinksNoServer checks `go list -deps`.
//
// # Calls, failover and errors
//
// Every call takes a context and is bounded by the client's per-call
// timeout (WithTimeout; the server is asked for a little less with the
// Request-Timeout header, so that its own answer arrives first). A call
// goes to the address that answered last; an address that cannot be
// reached (the request was not written) is left for the next one. The
// node that answers forwards writes and linearizable reads to the leader
// itself, so the client follows no redirects.
//
// Errors are the *errs.Error the node raised (errors.Is(err,
// errs.Conflict), errs.CodeOf), decoded from the API's error body;
// allocation's flat 409 is an *AllocationConflictError that keeps the
// winner. A write whose answer was lost after it was sent (or that the
// server reports outcome_unknown) is errs.IsOutcomeUnknown, advised with
// its idempotency key (errs.AdviseRetry): set the key yourself (NewKey)
// and send the same request again, e.g. with retry.Unknown.
//
// # Go client (usage)
//
//	c, err := client.New([]string{"http://10.0.0.1:8000", "http://10.0.0.2:8000"},
//		client.WithToken(os.Getenv("ARBITER_TOKEN")), client.WithTimeout(5*time.Second))
//	if err != nil { ... }
//	defer c.Close()
//	ctx := context.Background()
//	res, err := c.Nodes().Create(ctx, client.CreateRequest{
//		NodeID: "lock/build", Properties: map[string]any{"owner": "ci-7"}})
//	switch {
//	case errors.Is(err, errs.Unauthorized): // no or a wrong token
//	case err != nil: // errs.CodeOf(err) says which refusal
//	case res.Created: // this call won the id
//	}
//	for ev, err := range c.Cluster().Watch(client.ChangesQuery{}, true).Events(ctx) { ... }
//	// Follow rides out a node going away, resuming at its cursor:
//	for ev, err := range c.Cluster().Follow(ctx, client.ChangesQuery{After: last}) { ... }
//
// The services are Nodes, Concepts, Capacity, WorkItems, Reservations,
// Allocation, Projection and Cluster, named and shaped as the Python
// client's. Cluster also holds the administration (the admin role):
// Join, Remove, TransferLeader, StateHash, Snapshot and Restore (a
// backup streams to or from the leader, bounded by the caller's context
// or BackupTimeout, not by the per-call timeout). WithMaxAttempts(1)
// with one address asks that node once: a probe of one member.
package client
