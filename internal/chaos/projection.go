package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/projection"
)

// Projection is the fenced single-writer publication of hook projections
// under faults: clients are writer processes that acquire a target's
// lease, render (now and then for longer than the lease, as a process in
// a GC pause would), publish and release on failure, on two targets,
// while every node writes current.json under its own runtime root. It
// checks itself (Model is not used):
//
//   - a publish a client saw succeed was made under the client's own lease,
//     with no grant of the target in between (a taken-over holder never
//     publishes);
//   - every committed publication follows its own lease's grant with no
//     other grant in between;
//   - on every node, the publications written to current.json strictly
//     increase, are committed ones, and none was written after the node
//     applied a later grant of its target; at the end every node's file is
//     the target's last publication.
type Projection struct {
	mu      sync.Mutex
	t       testing.TB
	roots   map[int]string
	events  map[int][]projection.Event
	targets []string
	grants  map[uint64]string // epoch -> target, as clients saw them granted
	acks    []projectionAck
	tally   map[string]int
}

type projectionAck struct {
	target              string
	epoch, seq, atEpoch uint64
}

// NewProjection returns the workload.
func NewProjection() *Projection { return &Projection{} }

// incarnation marks a node's (re)start in its events.
const incarnation = "start"

const (
	projectionTTL   = 300 * time.Millisecond
	projectionStall = 3 * projectionTTL / 2
	projectionAgent = "chaos-agent"
)

func (w *Projection) Name() string { return "projection" }

// Model: the workload checks itself in Verify.
func (w *Projection) Model() (porcupine.Model, bool) { return porcupine.Model{}, false }

// Configure gives node i its runtime root (the same one across restarts
// and replacements) and records what its writer does.
func (w *Projection) Configure(t testing.TB, i int, cfg *cluster.Config) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != t {
		w.t, w.roots, w.events = t, map[int]string{}, map[int][]projection.Event{}
		w.grants, w.acks, w.tally, w.targets = map[uint64]string{}, nil, map[string]int{}, nil
	}
	if w.roots[i] == "" {
		w.roots[i] = t.TempDir()
	}
	// Each start of the node is a new incarnation of its FSM: what the
	// last one applied is not "applied" for the next, which replays the
	// log from its last snapshot.
	w.events[i] = append(w.events[i], projection.Event{Kind: incarnation})
	cfg.Domains = builtin.With(builtin.Options{})
	for k, d := range cfg.Domains {
		if d.Name == projection.Name {
			cfg.Domains[k] = projection.Domain(projection.WithRuntimeRoot(w.roots[i]), projection.WithObserver(func(e projection.Event) {
				w.mu.Lock()
				w.events[i] = append(w.events[i], e)
				w.mu.Unlock()
			}))
		}
	}
}

func (w *Projection) Setup(ctx context.Context, c *clustertest.Cluster) error {
	leader := c.Node(c.WaitLeader(timeout))
	s := projection.NewService(leader, leader)
	if _, err := s.SetConfig(ctx, projection.ConfigRequest{LeaseTTLMs: projectionTTL.Milliseconds()}); err != nil {
		return err
	}
	var targets []string
	for _, kind := range []string{"chaos-a", "chaos-b"} {
		res, err := s.RegisterTarget(ctx, projection.TargetRequest{AgentID: projectionAgent, Attested: projection.Attested{
			SchemaVersion: "1", Capability: "hooks", HarnessType: "chaos", ProjectionKind: kind,
			InstanceKeyDigest: "sha256:" + hex64('1'), WorkspaceKeyDigest: "sha256:" + hex64('2')},
			Channels: []projection.ChannelBinding{{Channel: projection.ChannelComputedRoute, Producer: "chaos-producer"}}})
		if err != nil {
			return err
		}
		targets = append(targets, res.TargetID)
	}
	w.mu.Lock()
	w.targets = targets
	w.mu.Unlock()
	return nil
}

func hex64(c byte) string { return string(slices.Repeat([]byte{c}, 64)) }

func (w *Projection) Client(i int, seed uint64) Client {
	return &projectionClient{id: i, w: w, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
}

type projectionClient struct {
	id  int
	w   *Projection
	rng *rand.Rand
	n   uint64
}

func (w *Projection) count(what string) {
	w.mu.Lock()
	w.tally[what]++
	w.mu.Unlock()
}

// Step is one writer cycle: submit to the channel now and then, acquire,
// render, publish (again after an unknown outcome: the same lease answers
// the same publication), release on failure.
func (c *projectionClient) Step(node *cluster.Node, rec *Recorder) {
	c.w.mu.Lock()
	target := c.w.targets[c.id%len(c.w.targets)]
	c.w.mu.Unlock()
	s := projection.NewService(node, node)
	c.n++
	if c.n%4 == 1 {
		ctx, cancel := rec.OpContext()
		w := uint64(time.Now().UnixNano()/1000)*16 + uint64(c.id)
		env := fmt.Sprintf(`{"schema":%q,"not_authority":true,"watermark":%d,"expires_at_ms":%d,"provenance":{"client":%d},"citations":[],"body":{"n":%d}}`,
			projection.ChannelComputedRoute, w, time.Now().Add(time.Hour).UnixMilli(), c.id, c.n)
		_, _ = s.Submit(ctx, projection.SubmitRequest{TargetID: target, Channel: projection.ChannelComputedRoute, SourceWatermark: w, Envelope: []byte(env)})
		cancel()
	}
	ctx, cancel := rec.OpContext()
	l, err := s.Acquire(ctx, projection.AcquireRequest{TargetID: target, HolderInstanceDigest: "sha256:" + hex64('a'+byte(c.id%6))})
	cancel()
	if err != nil {
		c.w.count("acquire " + string(errs.CodeOf(err)))
		time.Sleep(time.Duration(5+c.rng.IntN(20)) * time.Millisecond)
		return
	}
	c.w.mu.Lock()
	c.w.grants[l.FencingEpoch] = target
	c.w.mu.Unlock()
	if c.rng.IntN(8) == 0 {
		time.Sleep(projectionStall) // the lease expires meanwhile
	}
	fence := projection.FenceRequest{TargetID: target, Token: l.Token, FencingEpoch: l.FencingEpoch}
	ctx, cancel = rec.OpContext()
	res, err := s.Publish(ctx, fence)
	cancel()
	if errs.IsOutcomeUnknown(err) {
		ctx, cancel = rec.OpContext()
		res, err = s.Publish(ctx, fence)
		cancel()
	}
	if err == nil {
		rec.effective.Add(1)
		seq := res.PublicationSeq
		rec.ReadBack(fmt.Sprintf("publication %d of %s", seq, target), func(ctx context.Context, node *cluster.Node) error {
			v, err := projection.NewService(node, node).Target(ctx, target, fsm.Stale)
			switch {
			case err != nil:
				return err
			case v.LastPublication == nil || v.LastPublication.PublicationSeq < seq:
				return fmt.Errorf("last publication %+v, acknowledged %d", v.LastPublication, seq)
			}
			return nil
		})
		c.w.mu.Lock()
		c.w.acks = append(c.w.acks, projectionAck{target: target, epoch: l.FencingEpoch, seq: res.PublicationSeq, atEpoch: res.FencingEpoch})
		c.w.tally["published"]++
		c.w.mu.Unlock()
		return
	}
	c.w.count("publish " + string(errs.CodeOf(err)))
	ctx, cancel = rec.OpContext()
	_, _ = s.Release(ctx, fence)
	cancel()
}

// Verify checks the whole run (the same on every call) and node's files.
func (w *Projection) Verify(ctx context.Context, node *cluster.Node) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := -1
	for k := range w.roots {
		if fmt.Sprintf("n%d", k+1) == node.ID() {
			i = k
		}
	}
	if i < 0 {
		return fmt.Errorf("projection: no root for node %s", node.ID())
	}
	grants := map[string][]uint64{}
	committed := map[string]map[uint64]uint64{} // target -> seq -> epoch
	for _, id := range w.targets {
		committed[id] = map[uint64]uint64{}
	}
	for e, target := range w.grants {
		grants[target] = append(grants[target], e)
	}
	for _, evs := range w.events {
		for _, e := range evs {
			if e.Kind == incarnation {
				continue
			}
			if e.Kind == projection.EventGranted {
				grants[e.TargetID] = append(grants[e.TargetID], e.FencingEpoch)
				continue
			}
			if ep, ok := committed[e.TargetID][e.PublicationSeq]; ok && ep != e.FencingEpoch {
				return fmt.Errorf("projection: publication %d has epoch %d on one node, %d on another", e.PublicationSeq, ep, e.FencingEpoch)
			}
			committed[e.TargetID][e.PublicationSeq] = e.FencingEpoch
		}
	}
	takenOver := func(target string, e, s uint64) bool {
		for _, g := range grants[target] {
			if g > e && g < s {
				return true
			}
		}
		return false
	}
	for _, a := range w.acks {
		if ep, ok := committed[a.target][a.seq]; a.atEpoch != a.epoch || !ok || ep != a.epoch || takenOver(a.target, a.epoch, a.seq) {
			return fmt.Errorf("projection: a holder at epoch %d saw publication %d (epoch %d) succeed after a takeover or under another lease", a.epoch, a.seq, a.atEpoch)
		}
	}
	refused := w.tally["publish "+string(errs.CodeStaleFence)] + w.tally["publish "+string(errs.CodeExpired)]
	if len(w.acks) == 0 || refused == 0 {
		return fmt.Errorf("projection: %d publications acknowledged, %d stale or late publishes refused: the run did not test fencing", len(w.acks), refused)
	}
	for _, id := range w.targets {
		var last uint64
		for s, e := range committed[id] {
			if takenOver(id, e, s) {
				return fmt.Errorf("projection: publication %d at epoch %d came after a later grant", s, e)
			}
			last = max(last, s)
		}
		var wrote, granted uint64
		for _, e := range w.events[i] {
			if e.Kind == incarnation {
				granted = 0
				continue
			}
			if e.TargetID != id {
				continue
			}
			switch e.Kind {
			case projection.EventGranted:
				granted = max(granted, e.FencingEpoch)
			case projection.EventFailed:
				return fmt.Errorf("projection: n%d failed a write: %v", i+1, e.Err)
			case projection.EventWritten:
				if e.PublicationSeq <= wrote || committed[id][e.PublicationSeq] != e.FencingEpoch {
					return fmt.Errorf("projection: n%d wrote publication %d (epoch %d) after %d, or one never committed", i+1, e.PublicationSeq, e.FencingEpoch, wrote)
				}
				if !e.Restored && e.FencingEpoch < granted {
					return fmt.Errorf("projection: n%d wrote publication %d of epoch %d after it applied the grant of epoch %d", i+1, e.PublicationSeq, e.FencingEpoch, granted)
				}
				wrote = e.PublicationSeq
			}
		}
		if last == 0 {
			continue
		}
		b, err := projection.NewService(node, node).Current(ctx, id, fsm.Stale)
		if err != nil {
			return err
		}
		p, err := projection.ParsePublication(b)
		if err != nil || p.PublicationSeq != last {
			return fmt.Errorf("projection: n%d's state holds publication %+v (%v); the last committed is %d", i+1, p, err, last)
		}
		path, _ := projection.TargetPath(w.roots[i], id)
		if file, err := os.ReadFile(path); err != nil || string(file) != string(b) {
			return fmt.Errorf("projection: n%d's current.json is not publication %d: %s (%v)", i+1, last, file, err)
		}
	}
	return nil
}

// Summary is the workload's tally, for the run's report.
func (w *Projection) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("projection: %s", tally(w.tally))
}
