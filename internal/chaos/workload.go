package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/linearizability"
)

// Workload is what the harness needs to know about one module.
type Workload interface {
	// Name names the workload in test names and reports.
	Name() string
	// Model is the sequential specification the history is checked
	// against; ok is false for a workload that checks itself in Verify
	// (the fenced sink).
	Model() (m porcupine.Model, ok bool)
	// Setup prepares the cluster (cells, policies) before clients start.
	Setup(ctx context.Context, c *clustertest.Cluster) error
	// Client returns client i. Clients run concurrently, one goroutine
	// each; seed fixes each client's choices (not the interleaving).
	Client(i int, seed uint64) Client
	// Verify checks the workload's invariants on one replica after every
	// replica has converged, reading its local state only.
	Verify(ctx context.Context, node *cluster.Node) error
	// A workload may also have a Summary() string method: its tally,
	// appended to the run's report; a RewriteHistory method (see
	// historyRewriter); and a Configure method (see nodeConfigurer).
}

// historyRewriter is a workload whose history holds values that are only
// known for what they are once the run is over (capacity's fence tokens,
// which derive from the log index: the model knows them by their order of
// issue). RewriteHistory runs after every replica has converged, before
// the check, and reads the final state from node's local replica.
type historyRewriter interface {
	RewriteHistory(ctx context.Context, node *cluster.Node, h *linearizability.History) error
}

// nodeConfigurer is a workload that adjusts node i's configuration (its
// domains, say) before the node starts, and again at every restart.
type nodeConfigurer interface {
	Configure(t testing.TB, i int, cfg *cluster.Config)
}

// Client is one client of a workload.
type Client interface {
	// Step runs one operation against node, recording it through rec. It
	// bounds its own call (Recorder.OpContext). After a step in which a
	// call failed, the harness waits before the next (failureBackoff).
	Step(node *cluster.Node, rec *Recorder)
}

// Recorder records a run's operations in a history and keeps the tallies
// the harness reports and checks. It is safe for concurrent use.
type Recorder struct {
	h         *linearizability.History
	opTimeout time.Duration

	decided, effective atomic.Int64
	phase              atomic.Int64 // advanced at every injection and heal

	mu       sync.Mutex
	outcomes map[string]int // "kind/outcome" of decided calls
	unknown  map[string]int // error code of writes with an unknown outcome
	dropped  map[string]int // "read" or "write" that certainly had no effect
	odd      []string       // errors that are neither decided nor unavailable
	failed   map[int]bool   // clients whose last step had a call fail
	// readBacks check, at the end, that each acknowledged write is in the
	// state of every replica (see ReadBack).
	readBacks []readBack
}

// readBack is one acknowledged write and how to find it in a replica.
type readBack struct {
	what  string
	check func(ctx context.Context, node *cluster.Node) error
}

// maxReadBacks bounds what a run remembers to read back; a run that
// acknowledges more reads back the first ones and says so.
const maxReadBacks = 200_000

// ReadBack registers an acknowledged write: once every replica has
// converged, check must find it (or a later state that can only follow
// it) in each replica's local state. A write lost on every replica alike
// leaves their state hashes equal; this is what finds it.
func (r *Recorder) ReadBack(what string, check func(ctx context.Context, node *cluster.Node) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.readBacks) < maxReadBacks {
		r.readBacks = append(r.readBacks, readBack{what: what, check: check})
	}
}

// verifyReadBacks runs every registered read-back on node and returns
// the first few failures, and how many read-backs ran.
func (r *Recorder) verifyReadBacks(ctx context.Context, node *cluster.Node) (int, []error) {
	r.mu.Lock()
	all := append([]readBack(nil), r.readBacks...)
	r.mu.Unlock()
	var problems []error
	for _, rb := range all {
		if err := rb.check(ctx, node); err != nil && len(problems) < 10 {
			problems = append(problems, fmt.Errorf("acknowledged %s: %w", rb.what, err))
		}
	}
	return len(all), problems
}

func newRecorder(h *linearizability.History, opTimeout time.Duration) *Recorder {
	return &Recorder{h: h, opTimeout: opTimeout, outcomes: map[string]int{}, unknown: map[string]int{}, dropped: map[string]int{}, failed: map[int]bool{}}
}

// OpContext is the context one operation runs under: it ends after the
// run's operation timeout. Cancel it when the call returns.
func (r *Recorder) OpContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.opTimeout)
}

// Generation is the generation of objects (ids, cells) a client should
// pick its next operation's object from: the current phase's or the
// previous one's, at random. The harness starts a new phase at every
// injection and every heal, so each object lives across exactly one
// fault boundary: its history shows writes acknowledged before the
// boundary being read after it, while every object's history stays short
// enough for porcupine to decide (operations on different objects are
// checked separately, and an unknown outcome stays pending only within
// its object's history).
func (r *Recorder) Generation(rng *rand.Rand) int {
	p := int(r.phase.Load())
	if p > 0 && rng.IntN(2) == 0 {
		return p - 1
	}
	return p
}

// Call records that client is about to call an operation with input (a
// model input). Take it immediately before the call.
func (r *Recorder) Call(client int, input any) *Call {
	return &Call{r: r, op: r.h.Call(client, input), client: client, input: input}
}

// Call is one recorded operation; Decided or Failed resolves it.
type Call struct {
	r      *Recorder
	op     *linearizability.Op
	client int
	input  any
}

// Decided records the call's decided output (a model output). outcome
// labels it in the report ("acquire/granted"); effective says the call
// changed state, which is the progress the harness waits for after each
// fault.
func (c *Call) Decided(output any, outcome string, effective bool) {
	c.op.Return(output)
	c.r.decided.Add(1)
	if effective {
		c.r.effective.Add(1)
	}
	c.r.mu.Lock()
	c.r.outcomes[outcome]++
	c.r.mu.Unlock()
}

// Failed records a call that failed with err; write says whether it could
// have changed state (see linearizability.Op.Fail). An error that is not
// errs.Unavailable is neither a decision nor a fault's symptom: the run
// reports it as unexpected and fails.
func (c *Call) Failed(err error, write bool) {
	c.op.Fail(err, write)
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.failed[c.client] = true
	if !errors.Is(err, errs.Unavailable) {
		c.r.odd = append(c.r.odd, fmt.Sprintf("%+v: %v", c.input, err))
	}
	switch {
	case !write:
		c.r.dropped["read"]++
	case linearizability.CertainlyNotApplied(err):
		c.r.dropped["write"]++
	default:
		c.r.unknown[string(errs.CodeOf(err))]++
	}
}

// Unexpected records a result the workload could not map to its model
// (for example a read that returned a malformed page). The call is left
// out of the history and the run fails.
func (c *Call) Unexpected(what string) {
	c.op.Drop()
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.failed[c.client] = true
	c.r.odd = append(c.r.odd, fmt.Sprintf("%+v: %s", c.input, what))
}

// takeFailed reports whether a call of client failed since the last
// time it was asked, and forgets it.
func (r *Recorder) takeFailed(client int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	failed := r.failed[client]
	delete(r.failed, client)
	return failed
}

func (r *Recorder) unexpected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.odd...)
}

func (r *Recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("outcomes %s; unknown %s; dropped %s", tally(r.outcomes), tally(r.unknown), tally(r.dropped))
}

func tally(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", k, n))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}
