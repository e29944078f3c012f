package cluster

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

// core is the wiring every part of a node reads: its configuration,
// logger, state machine, metrics and peer client, the context that ends
// when it stops, and what Start learns (the raft handle, the advertised
// addresses). It holds no behaviour of its own beyond reading them; the
// parts embed it and reach each other through the interfaces in parts.go.
type core struct {
	cfg     Config
	logger  *slog.Logger
	fsm     *fsm.FSM
	metrics *metrics
	peers   *http.Client
	recent  *logRing // the last log lines, for the debug bundle (debug.go)

	// Set by Start, before any part runs.
	raft     *raft.Raft
	raftAddr string // advertised raft address
	apiAddr  string // advertised API host:port

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine a part starts (goBackground)
	// exitErr says why the node stopped on its own (it was removed); set
	// once, before the node stops (Node.exit).
	exitErr error
	done    chan struct{} // closed once the node has stopped
}

// goBackground runs f on a goroutine the node waits for when it stops.
func (c *core) goBackground(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// url is a peer's API URL for path.
func (c *core) url(api, path string) string {
	if c.cfg.TLS != nil {
		return "https://" + api + path
	}
	return "http://" + api + path
}

// isLeader reports whether this node believes it is the leader.
func (c *core) isLeader() bool { return c.raft != nil && c.raft.State() == raft.Leader }

// leaderAPI returns the leader's id and API address as this node knows
// them, or "" when unknown.
func (c *core) leaderAPI() (id, api string) {
	_, lid := c.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	if m, ok := c.fsm.Member(string(lid)); ok {
		return m.ID, m.APIAddr
	}
	return string(lid), ""
}

func (c *core) servers() ([]raft.Server, error) {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, raftError("read configuration", err)
	}
	return f.Configuration().Servers, nil
}

func (c *core) voterCount() int {
	servers, err := c.servers()
	if err != nil {
		return 0
	}
	n := 0
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}

// metadata is the replicated member metadata by id.
func (c *core) metadata() map[string]fsm.Member {
	out := map[string]fsm.Member{}
	for _, m := range c.fsm.Members() {
		out[m.ID] = m
	}
	return out
}

// withTimeout bounds ctx by ApplyTimeout when it has no deadline. A ctx
// with a deadline is returned as it is, with a cancel func that does
// nothing: a write passes through up to three of these (handler, Propose,
// viaLeader), and each context layer costs a timer or a registration with
// its parent on every request. Nothing started under the returned ctx
// outlives the call that made it: a forwarded call that gave up is left
// in its batch only while its ctx is done, which take skips.
func (c *core) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.cfg.ApplyTimeout)
}

// sleep is sleepCtx that also ends when the node stops.
func (c *core) sleep(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	return sleepCtx(ctx, d)
}

// stoppedErr is the error of every call on a node that has stopped (or is
// stopping): at once, naming this node rather than the cluster, and never
// an unknown outcome, since nothing was handed to raft. nil while it runs.
func (c *core) stoppedErr() error {
	if c.ctx.Err() == nil {
		return nil
	}
	why := "it was shut down or closed"
	if err := c.stopReason(); err != nil {
		why = err.Error()
	}
	return errs.Errorf(errs.CodeUnavailable, "node %s is stopped (%s): ask another member, or this node once restarted", c.cfg.ID, why)
}

// stopReason is why the node stopped on its own, once it has stopped; nil
// while it runs and after Shutdown, Close or a failed Start.
func (c *core) stopReason() error {
	select {
	case <-c.done:
		return c.exitErr
	default:
		return nil
	}
}

// waitFuture waits for a raft future or for ctx, whichever comes first.
func waitFuture(ctx context.Context, f raft.Future) error {
	w := futureWaits.Get().(*futureWait)
	w.f = f
	go w.wait()
	select {
	case err := <-w.done:
		w.f = nil
		futureWaits.Put(w)
		return err
	case <-ctx.Done():
		// Not reused: its goroutine is still to send on w.done.
		return ctx.Err()
	}
}

// futureWait is one waitFuture's goroutine and channel. Every write
// waits for its future with one, so they are reused (issue 42): the
// goroutine's send on done is the last thing it does with w, and w goes
// back to futureWaits only once that send has been received.
type futureWait struct {
	f    raft.Future
	done chan error
}

var futureWaits = sync.Pool{New: func() any { return &futureWait{done: make(chan error, 1)} }}

func (w *futureWait) wait() { w.done <- w.f.Error() }
