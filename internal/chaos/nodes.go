package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
	"github.com/arbiterhq/arbiter/nodes"
)

// Nodes is the workload of the replicated core's node primitives: clients
// create, compare-and-set and linearizably read a few nodes whose
// properties hold an owner and a fence. Each CAS is conditioned on the
// last fence its client saw, so many of them swap.
type Nodes struct {
	IDs int // how many nodes clients contend on (default 4)
	// StaleReads reads from the local replica instead of linearizably: a
	// deliberate bug, for the test that shows the harness catches one.
	StaleReads bool
}

func (w Nodes) Name() string {
	if w.StaleReads {
		return "nodes-stale-reads"
	}
	return "nodes"
}

func (w Nodes) Model() (porcupine.Model, bool)                    { return lin.NodesModel(), true }
func (w Nodes) Setup(context.Context, *clustertest.Cluster) error { return nil }

func (w Nodes) Client(i int, seed uint64) Client {
	ids := w.IDs
	if ids == 0 {
		ids = 4
	}
	return &nodesClient{id: i, ids: ids, stale: w.StaleReads, rng: rand.New(rand.NewPCG(seed, uint64(i))), fences: map[string]uint64{}}
}

// Verify reads every node of the run locally, page by page: each must
// hold a fence and an owner the model could have produced, and its
// version must be its fence (one create, then one swap per increment).
func (w Nodes) Verify(ctx context.Context, node *cluster.Node) error {
	nc := nodes.On(node)
	cursor := ""
	for pages := 0; pages < 1000; pages++ {
		page, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: nodesLabel, Limit: 128, After: cursor}, fsm.Stale)
		if err != nil {
			return err
		}
		for _, n := range page.Nodes {
			out, err := observeNode(n)
			if err != nil {
				return err
			}
			if out.Fence < 1 || out.Owner == "" || out.Version != out.Fence {
				return fmt.Errorf("node %s holds fence %d, owner %q at version %d", n.NodeID, out.Fence, out.Owner, out.Version)
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return nil
		}
	}
	return fmt.Errorf("more than 1000 pages of %s nodes", nodesLabel)
}

const nodesLabel = "chaos-nodes"

type nodesClient struct {
	id     int
	ids    int
	stale  bool
	rng    *rand.Rand
	fences map[string]uint64 // the last fence seen per node id
}

func (c *nodesClient) Step(node *cluster.Node, rec *Recorder) {
	id := fmt.Sprintf("g%d-obj-%d", rec.Generation(c.rng), c.rng.IntN(c.ids))
	owner := fmt.Sprintf("c%d", c.id)
	var in lin.NodeInput
	switch p := c.rng.IntN(10); {
	case p < 2:
		in = lin.NodeInput{Kind: lin.NodeCreate, ID: id, Owner: owner, Fence: 1}
	case p < 6:
		expect := max(c.fences[id], 1)
		in = lin.NodeInput{Kind: lin.NodeCAS, ID: id, Owner: owner, Expect: expect, Fence: expect + 1}
	default:
		in = lin.NodeInput{Kind: lin.NodeGet, ID: id}
	}
	read := fsm.Linearizable
	if c.stale {
		read = fsm.Stale
	}
	if out, ok := doNodeOp(nodes.On(node), c.id, in, read, rec); ok && !out.NotFound {
		c.fences[id] = out.Fence
	}
}

// doNodeOp runs one operation, records it and returns its decided output.
func doNodeOp(nc *nodes.Client, client int, in lin.NodeInput, read fsm.Consistency, rec *Recorder) (lin.NodeOutput, bool) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	call := rec.Call(client, in)
	var out lin.NodeOutput
	var n nodes.Record
	var err error
	switch in.Kind {
	case lin.NodeCreate:
		var res *nodes.CreateResult
		res, err = nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: in.ID, Labels: []string{nodesLabel},
			Properties: map[string]any{"fence": in.Fence, "owner": in.Owner}})
		if err == nil {
			n, out.Created = res.Node, res.Created
		}
	case lin.NodeCAS:
		var res *nodes.CASResult
		res, err = nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: in.ID,
			Conditions: map[string]any{"fence": in.Expect},
			Updates:    map[string]any{"fence": in.Fence, "owner": in.Owner}})
		if err == nil {
			n, out.Swapped = res.Node, res.Swapped
		}
	case lin.NodeGet:
		var got *nodes.Record
		if got, err = nc.Get(ctx, in.ID, read); err == nil {
			n = *got
		}
	}
	write := in.Kind != lin.NodeGet
	switch {
	case err == nil:
		observed, oerr := observeNode(n)
		if oerr != nil {
			call.Unexpected(oerr.Error())
			return out, false
		}
		observed.Created, observed.Swapped = out.Created, out.Swapped
		out = observed
	case errors.Is(err, errs.NotFound) && in.Kind != lin.NodeCreate:
		out = lin.NodeOutput{NotFound: true} // decided
	default:
		call.Failed(err, write)
		return out, false
	}
	call.Decided(out, fmt.Sprintf("%v/%s", in.Kind, nodeOutcome(out)), out.Created || out.Swapped)
	if out.Created || out.Swapped {
		rec.ReadBack(fmt.Sprintf("%v of %s at version %d", in.Kind, n.NodeID, n.Version), readBackNode(n))
	}
	return out, true
}

// readBackNode checks that a replica holds the node at the acknowledged
// version (the same write: same modified index) or at a later one.
func readBackNode(acked nodes.Record) func(context.Context, *cluster.Node) error {
	return func(ctx context.Context, node *cluster.Node) error {
		got, err := nodes.On(node).Get(ctx, acked.NodeID, fsm.Stale)
		switch {
		case err != nil:
			return err
		case got.Version < acked.Version, got.Version == acked.Version && got.ModifiedIndex != acked.ModifiedIndex:
			return fmt.Errorf("node at version %d (modified at %d), acknowledged at version %d (modified at %d)",
				got.Version, got.ModifiedIndex, acked.Version, acked.ModifiedIndex)
		}
		return nil
	}
}

func nodeOutcome(out lin.NodeOutput) string {
	switch {
	case out.NotFound:
		return "not_found"
	case out.Created:
		return "created"
	case out.Swapped:
		return "swapped"
	}
	return "unchanged"
}

// observeNode is the model's view of a node: fence, owner and version.
func observeNode(n nodes.Record) (lin.NodeOutput, error) {
	out := lin.NodeOutput{Version: n.Version}
	if err := json.Unmarshal(n.Properties["fence"], &out.Fence); err != nil {
		return out, fmt.Errorf("node %s: fence %s: %v", n.NodeID, n.Properties["fence"], err)
	}
	if err := json.Unmarshal(n.Properties["owner"], &out.Owner); err != nil {
		return out, fmt.Errorf("node %s: owner %s: %v", n.NodeID, n.Properties["owner"], err)
	}
	return out, nil
}
