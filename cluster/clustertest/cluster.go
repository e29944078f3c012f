package clustertest

import (
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/identity"
	inner "github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
)

// Options shape a test cluster. The zero value is three nodes serving the
// built-in domains, raft over an in-memory transport.
type Options struct {
	// Nodes is the cluster size (default 3).
	Nodes int
	// TCP runs raft over loopback TCP instead of the in-memory transport
	// (slower; the same faults apply).
	TCP bool
	// Domains builds the domains of node i (nil: domain/builtin's on
	// every node). A host program that adds its own domains lists them
	// here.
	Domains func(i int) []domain.Domain
	// Configure, if set, adjusts node i's configuration before it starts
	// (timeouts, retention, snapshot thresholds).
	Configure func(i int, cfg *cluster.Config)
	// Principals turns authentication on; nodes then authenticate each
	// other with a generated peer token.
	Principals *identity.Registry
	// Verbose logs every node's messages to the test log (to standard
	// error for a cluster from Start).
	Verbose bool
}

func (o Options) inner() inner.Options {
	return inner.Options{Nodes: o.Nodes, TCP: o.TCP, Domains: o.Domains, Configure: o.Configure, Principals: o.Principals, Verbose: o.Verbose}
}

// Cluster is a running test cluster. Nodes are numbered 0..Size()-1; the
// node of index i has the id "n<i+1>".
type Cluster struct {
	c     *inner.Cluster
	close func()
}

// New starts a cluster for the test t, waits until it has a leader and
// accepts every command of its domains, and stops it when t ends. A
// failure to start, or of a fault method later, fails t.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	return &Cluster{c: inner.New(t, opts.inner()), close: func() {}}
}

// Start is New outside a test: it returns the error New would fail the
// test with, and the caller stops the cluster with Close. A fault method
// that fails later panics with its message.
func Start(opts Options) (c *Cluster, err error) {
	tb := newStandalone(opts.Verbose)
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			tb.cleanup()
			c, err = nil, f
		}
	}()
	in := inner.New(tb, opts.inner())
	return &Cluster{c: in, close: tb.cleanup}, nil
}

// Close stops every node and removes their files (a cluster from New
// does so when its test ends; Close does nothing more).
func (c *Cluster) Close() { c.close() }

// Size is the number of nodes, running or not.
func (c *Cluster) Size() int { return c.c.Size() }

// Node is node i (nil while it is stopped): a *cluster.Node, which is an
// fsm.Proposer and fsm.Reader, as an embedding program holds one. A
// restart makes a new *cluster.Node: a pointer taken before Kill stays
// stopped, and every call on it fails at once with unavailable ("node
// ... is stopped"). Ask Node(i) again after Restart, or build services on
// a Proposer that does (see Example_lockService).
func (c *Cluster) Node(i int) *cluster.Node { return c.c.Node(i) }

// URL is the base URL of node i's HTTP API (its address stays the same
// across a Restart).
func (c *Cluster) URL(i int) string { return c.c.URL(i) }

// URLs are the base URLs of every running node.
func (c *Cluster) URLs() []string {
	var out []string
	for _, i := range c.c.Running() {
		out = append(out, c.c.URL(i))
	}
	return out
}

// Remote is a raw client of the cluster over every running node's API
// (internal/rawremote: a domain package's own service runs over it, as
// over an embedded node), moving to the next node while one cannot be
// reached. A program on another host uses package client, over URLs.
// It is a domain.Conn, the interface every domain service takes, so that
// its type is one a test outside this module can name.
func (c *Cluster) Remote() domain.Conn { return c.RemoteOf(c.c.Running()...) }

// RemoteOf is a client of the nodes with the given indexes only: a
// client on the far side of a partition.
func (c *Cluster) RemoteOf(nodes ...int) domain.Conn {
	urls := make([]string, 0, len(nodes))
	for _, i := range nodes {
		urls = append(urls, c.c.URL(i))
	}
	return rawremote.New(urls...).WithTimeout(10 * time.Second)
}

// Advance moves every node's clock d forward, as if d had passed, and
// returns once every running node has applied FSM time d later (the
// leader's next tick carries it): a lease, claim or window that expires
// within d has expired everywhere, without the test sleeping. It fails
// the test (panics after Start) if a node does not get there, or if the
// cluster ticks less than once a second (use MoveClock there).
func (c *Cluster) Advance(d time.Duration) { c.c.Advance(d) }

// MoveClock moves every node's clock d forward and returns at once: the
// next command the leader stamps carries FSM time at least d later.
func (c *Cluster) MoveClock(d time.Duration) { c.c.MoveClock(d) }

// Running lists the indexes of the running nodes.
func (c *Cluster) Running() []int { return c.c.Running() }

// Leader is the index of a running node that is leader now, or -1.
func (c *Cluster) Leader() int { return c.c.Leader() }

// WaitLeader waits until every running node reachable from a leader
// agrees on it, and returns its index.
func (c *Cluster) WaitLeader(timeout time.Duration) int { return c.c.WaitLeader(timeout) }

// Partition cuts every link between nodes of different groups; a node in
// no group is cut off from every other.
func (c *Cluster) Partition(groups ...[]int) { c.c.Partition(groups...) }

// Isolate cuts node i off from every other node.
func (c *Cluster) Isolate(i int) { c.c.Isolate(i) }

// Heal restores every link.
func (c *Cluster) Heal() { c.c.Heal() }

// Pause freezes node i's traffic: every message to or from it waits,
// then arrives late on Resume, while its timers keep running.
func (c *Cluster) Pause(i int) { c.c.Pause(i) }

// Resume ends Pause(i).
func (c *Cluster) Resume(i int) { c.c.Resume(i) }

// Delay makes every message between nodes wait a random time up to d; 0
// ends it.
func (c *Cluster) Delay(d time.Duration) { c.c.Delay(d) }

// Kill stops node i at once, without a leadership transfer, as a crash
// would; its files remain for Restart.
func (c *Cluster) Kill(i int) { c.c.Stop(i) }

// Restart starts the stopped node i again on its data and addresses, as
// a new *cluster.Node: Node(i) returns it.
func (c *Cluster) Restart(i int) { c.c.Restart(i) }

// TransferLeadership asks the leader to hand over to another node and
// returns the new leader's index.
func (c *Cluster) TransferLeadership(timeout time.Duration) int {
	return c.c.TransferLeadership(timeout)
}

// WaitConverged waits until every running node holds the same state at
// the same index and returns it; replicas that differ fail the test (or
// make a cluster from Start panic).
func (c *Cluster) WaitConverged(timeout time.Duration) cluster.StateHash {
	return c.c.WaitConverged(timeout)
}

// Eventually polls cond every 20 ms until it holds (true) or timeout
// passes (false).
func (c *Cluster) Eventually(timeout time.Duration, cond func() bool) bool {
	return c.c.Eventually(timeout, cond)
}
