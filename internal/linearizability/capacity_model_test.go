package linearizability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// Cells "a" and "b" hold 4 units each.
var capCaps = map[string]uint64{"a": 4, "b": 4}

func capOp(client int, call, ret int64, in CapInput, out any) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func capAcq(cell, owner string, amount uint64) CapInput {
	return CapInput{Kind: CapAcquire, Cell: cell, Owner: owner, Amount: amount}
}

func capRenewIn(cell, owner string, fence, epoch uint64) CapInput {
	return CapInput{Kind: CapRenew, Cell: cell, Owner: owner, Fence: fence, Epoch: epoch}
}

func capReleaseIn(cell, owner string, fence, epoch uint64) CapInput {
	return CapInput{Kind: CapRelease, Cell: cell, Owner: owner, Fence: fence, Epoch: epoch}
}

func capStatusIn(cell string) CapInput { return CapInput{Kind: CapStatus, Cell: cell} }

// inGraph is in on the same cell id of graph g.
func inGraph(g string, in CapInput) CapInput {
	in.Graph = g
	return in
}

func capGrant(fence, used uint64) CapOutput {
	return CapOutput{Decision: CapGranted, Fence: fence, Used: used}
}

func capDenied(decision string) CapOutput { return CapOutput{Decision: decision} }

func capSeen(used, lastFence uint64) CapOutput { return CapOutput{Used: used, LastFence: lastFence} }

var (
	capOK        = CapOutput{Decision: CapGranted}
	capUnknownOp = UnknownOutput{}
)

func checkCap(t *testing.T, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return checkBoth(t, CapacityModel(capCaps), ops)
}

func TestCapacityModelAcceptsLinearizableHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"sequential lifecycle", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 3), capGrant(1, 3)),
			capOp(0, 2, 3, capAcq("a", "o2", 2), CapOutput{Decision: CapExhausted, Used: 3}),
			capOp(0, 4, 5, capRenewIn("a", "o1", 1, 1), CapOutput{Decision: CapGranted, Epoch: 2}),
			capOp(0, 6, 7, capRenewIn("a", "o1", 1, 1), capDenied(CapStaleEpoch)),
			capOp(0, 8, 9, capReleaseIn("a", "o2", 1, 2), capDenied(CapStaleFence)),
			capOp(0, 10, 11, capReleaseIn("a", "o1", 1, 2), capOK),
			capOp(0, 12, 13, capReleaseIn("a", "o1", 1, 2), capDenied(CapStaleFence)),
			capOp(0, 14, 15, capStatusIn("a"), capSeen(0, 1)),
			capOp(0, 16, 17, capAcq("a", "o2", 4), capGrant(2, 4)),
			capOp(0, 18, 19, capRenewIn("a", "o2", 7, 1), capDenied(CapInvalid)),
		}},
		{"concurrent acquires take fences in their linearization order", []porcupine.Operation{
			capOp(0, 0, 10, capAcq("a", "o1", 1), capGrant(2, 3)),
			capOp(1, 1, 9, capAcq("a", "o2", 2), capGrant(1, 2)),
			capOp(2, 11, 12, capStatusIn("a"), capSeen(3, 2)),
		}},
		{"a status concurrent with a release may see either side", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 4), capGrant(1, 4)),
			capOp(0, 2, 10, capReleaseIn("a", "o1", 1, 1), capOK),
			capOp(1, 3, 4, capStatusIn("a"), capSeen(4, 1)),
			capOp(2, 5, 6, capStatusIn("a"), capSeen(0, 1)),
		}},
		{"cells are independent", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 4), capGrant(1, 4)),
			capOp(1, 0, 1, capAcq("b", "o1", 4), capGrant(1, 4)),
			capOp(0, 2, 3, capAcq("a", "o1", 1), CapOutput{Decision: CapExhausted, Used: 4}),
		}},
		{"a cell id of two graphs names two cells", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 4), capGrant(1, 4)),
			capOp(1, 0, 1, inGraph("g2", capAcq("a", "o1", 3)), capGrant(1, 3)),
			capOp(0, 2, 3, inGraph("g2", capReleaseIn("a", "o1", 1, 1)), capOK),
			capOp(1, 4, 5, capStatusIn("a"), capSeen(4, 1)),
			capOp(1, 6, 7, inGraph("g2", capStatusIn("a")), capSeen(0, 1)),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkCap(t, tc.ops); res != porcupine.Ok {
				t.Fatalf("legal history judged %s", res)
			}
		})
	}
}

func TestCapacityModelRejectsNonLinearizableHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"two grants of one fence", []porcupine.Operation{
			capOp(0, 0, 10, capAcq("a", "o1", 1), capGrant(1, 1)),
			capOp(1, 1, 9, capAcq("a", "o2", 1), capGrant(1, 2)),
		}},
		{"a grant over capacity", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 3), capGrant(1, 3)),
			capOp(0, 2, 3, capAcq("a", "o2", 2), capGrant(2, 5)),
		}},
		{"exhausted while free", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 1), capGrant(1, 1)),
			capOp(0, 2, 3, capAcq("a", "o2", 2), CapOutput{Decision: CapExhausted, Used: 1}),
		}},
		{"a fence skipped", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 1), capGrant(1, 1)),
			capOp(0, 2, 3, capAcq("a", "o1", 1), capGrant(3, 2)),
		}},
		{"a stale epoch renewed", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 1), capGrant(1, 1)),
			capOp(0, 2, 3, capRenewIn("a", "o1", 1, 1), CapOutput{Decision: CapGranted, Epoch: 2}),
			capOp(0, 4, 5, capRenewIn("a", "o1", 1, 1), CapOutput{Decision: CapGranted, Epoch: 3}),
		}},
		{"a lease released twice", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 1), capGrant(1, 1)),
			capOp(0, 2, 3, capReleaseIn("a", "o1", 1, 1), capOK),
			capOp(1, 4, 5, capReleaseIn("a", "o1", 1, 1), capOK),
		}},
		{"another owner releases", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 1), capGrant(1, 1)),
			capOp(1, 2, 3, capReleaseIn("a", "o2", 1, 1), capOK),
		}},
		{"a release not seen by a later status", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 2), capGrant(1, 2)),
			capOp(0, 2, 3, capReleaseIn("a", "o1", 1, 1), capOK),
			capOp(1, 4, 5, capStatusIn("a"), capSeen(2, 1)),
		}},
		{"a grant seen in another graph", []porcupine.Operation{
			capOp(0, 0, 1, inGraph("g2", capAcq("a", "o1", 2)), capGrant(1, 2)),
			capOp(1, 2, 3, capStatusIn("a"), capSeen(2, 1)),
		}},
		{"a release of another graph's lease", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 4), capGrant(1, 4)),
			capOp(0, 2, 3, inGraph("g2", capReleaseIn("a", "o1", 1, 1)), capOK),
		}},
		{"usage that no grant explains", []porcupine.Operation{
			capOp(0, 0, 1, capAcq("a", "o1", 2), capGrant(1, 2)),
			capOp(1, 2, 3, capStatusIn("a"), capSeen(3, 1)),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkCap(t, tc.ops); res != porcupine.Illegal {
				t.Fatalf("non-linearizable history judged %s", res)
			}
		})
	}
}

func TestCapacityModelUnknownOutcomes(t *testing.T) {
	// An acquire whose outcome is unknown may explain a fence and a usage
	// nobody else accounts for, at any point after its call.
	applied := []porcupine.Operation{
		capOp(0, 0, Pending, capAcq("a", "o1", 2), capUnknownOp),
		capOp(1, 5, 6, capAcq("a", "o2", 1), capGrant(2, 3)),
		capOp(1, 7, 8, capStatusIn("a"), capSeen(3, 2)),
	}
	if res := checkCap(t, applied); res != porcupine.Ok {
		t.Fatalf("an unknown acquire that was applied: %s", res)
	}
	// ... or never take effect.
	never := []porcupine.Operation{
		capOp(0, 0, Pending, capAcq("a", "o1", 2), capUnknownOp),
		capOp(1, 5, 6, capAcq("a", "o2", 4), capGrant(1, 4)),
		capOp(1, 7, 8, capStatusIn("a"), capSeen(4, 1)),
	}
	if res := checkCap(t, never); res != porcupine.Ok {
		t.Fatalf("an unknown acquire that never took effect: %s", res)
	}
	// But it cannot take effect before it was called.
	early := []porcupine.Operation{
		capOp(1, 0, 1, capAcq("a", "o2", 1), capGrant(2, 3)),
		capOp(0, 5, Pending, capAcq("a", "o1", 2), capUnknownOp),
	}
	if res := checkCap(t, early); res != porcupine.Illegal {
		t.Fatalf("an unknown acquire linearized before its call: %s", res)
	}
	// An unknown release frees capacity; an unknown renew moves the epoch.
	release := []porcupine.Operation{
		capOp(0, 0, 1, capAcq("a", "o1", 4), capGrant(1, 4)),
		capOp(0, 2, Pending, capReleaseIn("a", "o1", 1, 1), capUnknownOp),
		capOp(1, 3, 4, capAcq("a", "o2", 4), capGrant(2, 4)),
	}
	if res := checkCap(t, release); res != porcupine.Ok {
		t.Fatalf("an unknown release that was applied: %s", res)
	}
	renew := []porcupine.Operation{
		capOp(0, 0, 1, capAcq("a", "o1", 1), capGrant(1, 1)),
		capOp(0, 2, Pending, capRenewIn("a", "o1", 1, 1), capUnknownOp),
		capOp(1, 3, 4, capRenewIn("a", "o1", 1, 1), capDenied(CapStaleEpoch)),
		capOp(1, 5, 6, capRenewIn("a", "o1", 1, 2), CapOutput{Decision: CapGranted, Epoch: 3}),
	}
	if res := checkCap(t, renew); res != porcupine.Ok {
		t.Fatalf("an unknown renew that was applied: %s", res)
	}
}

func TestCapacityModelRefusesUnknownCellsAndKinds(t *testing.T) {
	m := CapacityModel(capCaps)
	if ok, _ := m.Step(m.Init(), capAcq("nowhere", "o1", 1), UnknownOutput{}); ok {
		t.Error("a cell without a capacity was accepted")
	}
	if ok, _ := m.Step(m.Init(), CapInput{Kind: 99, Cell: "a"}, UnknownOutput{}); ok {
		t.Error("an unknown kind was accepted")
	}
	// Step must not change the state it is given.
	s0 := m.Init()
	_, s1 := m.Step(s0, capAcq("a", "o1", 1), capGrant(1, 1))
	_, s2 := m.Step(s1, capReleaseIn("a", "o1", 1, 1), capOK)
	if ok, _ := m.Step(s1, capReleaseIn("a", "o1", 1, 1), capOK); !ok {
		t.Error("stepping s1 again after a release from it failed: Step changed s1")
	}
	if m.Equal(s1, s2) {
		t.Error("states before and after a release are equal")
	}
	if !m.Equal(s0, m.Init()) || m.Hash(s0) != m.Hash(m.Init()) {
		t.Error("Init changed, or equal states hash differently")
	}
}

func TestCapacityModelDescriptions(t *testing.T) {
	m := CapacityModel(capCaps)
	for _, tc := range []struct {
		in   CapInput
		out  any
		want string
	}{
		{capAcq("a", "o1", 2), capGrant(1, 2), "acquire(a, 2 for o1) -> granted fence 1, used 2"},
		{capAcq("a", "o1", 2), CapOutput{Decision: CapExhausted, Used: 3}, "acquire(a, 2 for o1) -> exhausted, used 3"},
		{capRenewIn("a", "o1", 1, 1), CapOutput{Decision: CapGranted, Epoch: 2}, "renew(a, fence 1 epoch 1 by o1) -> granted epoch 2"},
		{capReleaseIn("b", "o2", 3, 2), capDenied(CapStaleFence), "release(b, fence 3 epoch 2 by o2) -> stale_fence"},
		{capStatusIn("a"), capSeen(1, 2), "status(a) -> {used 1, last fence 2}"},
		{capAcq("a", "o1", 1), UnknownOutput{}, "acquire(a, 1 for o1) -> ? (outcome unknown)"},
		{inGraph("g2", capStatusIn("a")), capSeen(1, 2), "status(g2/a) -> {used 1, last fence 2}"},
	} {
		if got := m.DescribeOperation(tc.in, tc.out); got != tc.want {
			t.Errorf("DescribeOperation = %q, want %q", got, tc.want)
		}
	}
	_, s := m.Step(m.Init(), capAcq("a", "o1", 2), capGrant(1, 2))
	if got, want := m.DescribeState(s), "{used 2, last fence 1, active [#1 o1 2 e1]}"; got != want {
		t.Errorf("DescribeState = %q, want %q", got, want)
	}
}

// TestCapacityModelAgreesWithService runs random sequential calls against
// the real capacity service over a bare FSM and requires every decided
// output to be the one the model's step gives: the model is checked
// against the implementation before it is trusted to judge histories.
// The calls go to cells a and b of two graphs of one tenant (the default
// one and g2), with every command version enabled, so fences derive from
// the log index: each token the service hands out is turned into its
// order of issue on its cell, which is what the model knows fences by
// (as chaos's RewriteHistory does), and must be above every token the
// cell handed out before.
func TestCapacityModelAgreesWithService(t *testing.T) {
	ctx := context.Background()
	l, err := fsmtest.New(capacity.Module())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Enable(fsm.ServedBy(capacity.Module())); err != nil {
		t.Fatal(err)
	}
	svc := capacity.NewService(l, l)
	graphs, cells := []string{"", "g2"}, []string{"a", "b"}
	for _, g := range graphs {
		for cell, c := range capCaps {
			if _, err := svc.UpdateCell(ctx, capacity.UpdateCellRequest{TenantRef: "t", GraphRef: g,
				Cell: capacity.CellSpec{CellID: cell, Capacities: map[string]uint64{"slot": c}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := CapacityModel(capCaps)
	part := func(in CapInput) string { return in.Graph + "/" + in.Cell }
	state := map[string]any{}
	// tokens lists each cell's fence tokens in order of issue: the model's
	// fence n is tokens[n-1].
	tokens := map[string][]uint64{}
	ordinal := func(in CapInput, token uint64) uint64 {
		if token == 0 {
			return 0
		}
		for i, f := range tokens[part(in)] {
			if f == token {
				return uint64(i + 1)
			}
		}
		t.Fatalf("%s: fence token %d was never handed out on this cell", describeCapInput(in), token)
		return 0
	}
	type held struct {
		graph, cell, id, owner string
		fence, epoch           uint64 // fence: the token
	}
	var leases []held
	rng := rand.New(rand.NewPCG(1, 2))
	owners := []string{"o1", "o2"}
	for i := 0; i < 600; i++ {
		var in CapInput
		var h held
		token := uint64(0) // the fence token presented
		p := rng.IntN(10)
		switch {
		case p < 4 || len(leases) == 0:
			in = inGraph(graphs[rng.IntN(2)], capAcq(cells[rng.IntN(2)], owners[rng.IntN(2)], uint64(1+rng.IntN(3))))
		case p < 8:
			h = leases[rng.IntN(len(leases))]
			kind := CapRenew
			if p >= 6 {
				kind = CapRelease
			}
			in = CapInput{Kind: kind, Graph: h.graph, Cell: h.cell, Owner: h.owner, Epoch: h.epoch}
			token = h.fence
			switch rng.IntN(6) {
			case 0:
				in.Owner = owners[rng.IntN(2)]
			case 1:
				in.Epoch += uint64(rng.IntN(3)) - 1
			}
			in.Fence = ordinal(in, token)
		default:
			in = inGraph(graphs[rng.IntN(2)], capStatusIn(cells[rng.IntN(2)]))
		}
		if state[part(in)] == nil {
			state[part(in)] = m.Init()
		}
		var out CapOutput
		switch in.Kind {
		case CapAcquire:
			res, err := svc.Acquire(ctx, capacity.AcquireRequest{TenantRef: "t", GraphRef: in.Graph, WorkItemID: "w",
				OwnerDigest: in.Owner, IdempotencyKey: fmt.Sprintf("k%d", i), TTLMs: time.Hour.Milliseconds(),
				Demands: []capacity.Demand{{CellID: in.Cell, ResourceClass: "slot", Amount: in.Amount}}})
			if err != nil && !errors.Is(err, errs.Exhausted) {
				t.Fatalf("acquire: %v", err)
			}
			out = CapOutput{Decision: string(res.Decision), Used: res.Available[0].Used}
			if res.Decision == capacity.Granted {
				l := res.Leases[0]
				if ts := tokens[part(in)]; len(ts) > 0 && l.Fence <= ts[len(ts)-1] {
					t.Fatalf("step %d: %s granted fence token %d, not above %d", i, describeCapInput(in), l.Fence, ts[len(ts)-1])
				}
				tokens[part(in)] = append(tokens[part(in)], l.Fence)
				out.Fence = ordinal(in, l.Fence)
				leases = append(leases, held{graph: in.Graph, cell: in.Cell, id: l.LeaseID, owner: in.Owner, fence: l.Fence, epoch: 1})
			}
		case CapRenew, CapRelease:
			call := svc.Renew
			if in.Kind == CapRelease {
				call = svc.Release
			}
			res, err := call(ctx, capacity.LeasesRequest{TenantRef: "t", GraphRef: in.Graph, OwnerDigest: in.Owner,
				Leases: []capacity.LeaseRef{{LeaseID: h.id, LeaseEpoch: in.Epoch, Fence: token}}})
			if res == nil {
				t.Fatalf("%v: %v", in.Kind, err)
			}
			out = CapOutput{Decision: string(res.Decision)}
			if in.Kind == CapRenew && res.Decision == capacity.Granted {
				out.Epoch = res.Refs()[0].LeaseEpoch
				for j := range leases {
					if leases[j].graph == h.graph && leases[j].id == h.id {
						leases[j].epoch = out.Epoch
					}
				}
			}
		case CapStatus:
			res, err := svc.Status(ctx, capacity.ReadRequest{TenantRef: "t", GraphRef: in.Graph, CellID: in.Cell, MaxCount: 1}, 0)
			if err != nil {
				t.Fatal(err)
			}
			out = CapOutput{Used: res.Cells[0].Classes[0].Used, LastFence: ordinal(in, res.Cells[0].LastFence)}
		}
		ok, next := m.Step(state[part(in)], in, out)
		if !ok {
			_, _, want := stepCapWant(state[part(in)], in)
			t.Fatalf("step %d: %s, the model wants %s (state %s)", i, m.DescribeOperation(in, out),
				describeCapOutput(want), m.DescribeState(state[part(in)]))
		}
		state[part(in)] = next
	}
	var descs []string
	for _, k := range []string{"/a", "/b", "g2/a", "g2/b"} {
		if state[k] != nil {
			descs = append(descs, k+" "+m.DescribeState(state[k]))
		}
	}
	t.Logf("final states: %s", strings.Join(descs, "; "))
}

func stepCapWant(state any, in CapInput) (capCell, bool, CapOutput) {
	next, want, ok := stepCap(capCaps, state.(capCell), in)
	return next, ok, want
}
