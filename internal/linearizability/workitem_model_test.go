package linearizability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/workitem"
)

func wiOp(client int, call, ret int64, in WIInput, out any) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func wiSub(key string, prio int64, dep string, cap int64) WIInput {
	return WIInput{Kind: WISubmit, Tenant: "t", Key: key, ID: "i-" + key, Priority: prio, Dep: dep, Cap: cap}
}

func wiClaimIn() WIInput { return WIInput{Kind: WIClaim, Tenant: "t"} }

func wiDone(id string, attempt int64, fence uint64) WIInput {
	return WIInput{Kind: WIComplete, Tenant: "t", ID: id, Attempt: attempt, Fence: fence}
}

func wiCancelIn(id string) WIInput { return WIInput{Kind: WICancel, Tenant: "t", ID: id} }

func wiListIn() WIInput { return WIInput{Kind: WIList, Tenant: "t"} }

func wiAdmitted(seq uint64, flying int64) WIOutput {
	return WIOutput{Decision: WIOK, Seq: seq, InFlight: flying}
}

func wiClaimed(id string, attempt int64, fence uint64) WIOutput {
	return WIOutput{Decision: WIOK, ID: id, Attempt: attempt, Fence: fence}
}

func wiSays(d string) WIOutput { return WIOutput{Decision: d} }

func checkWI(t *testing.T, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return checkBoth(t, WorkItemModel(), ops)
}

func TestWorkItemModelAcceptsLinearizableHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"sequential lifecycle", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 5, "i-a", 5), wiAdmitted(2, 2)),
			wiOp(0, 4, 5, wiSub("a", 0, "", 5), WIOutput{Decision: WIReplayed, Seq: 1, InFlight: 1}),
			wiOp(0, 6, 7, WIInput{Kind: WISubmit, Tenant: "t", Key: "a", Variant: 1, ID: "i-a", Cap: 5}, wiSays(WIIdempotencyConflict)),
			wiOp(0, 8, 9, wiClaimIn(), wiClaimed("i-a", 1, 10)), // b waits for a
			wiOp(0, 10, 11, wiClaimIn(), wiSays(WINotFound)),
			wiOp(0, 12, 13, wiDone("i-a", 1, 9), wiSays(WIStaleFence)),
			wiOp(0, 14, 15, wiDone("i-a", 1, 10), wiSays(WIOK)),
			wiOp(0, 16, 17, wiDone("i-a", 1, 10), wiSays(WIOK)),
			wiOp(0, 18, 19, wiListIn(), WIOutput{List: "i-a:succeeded:1:true;i-b:pending:0:true"}),
			wiOp(0, 20, 21, wiClaimIn(), wiClaimed("i-b", 1, 30)),
			wiOp(0, 22, 23, wiCancelIn("i-b"), wiSays(WIOK)),
			wiOp(0, 24, 25, wiCancelIn("i-a"), wiSays(WIConflict)),
			wiOp(0, 26, 27, wiSub("c", 0, "i-b", 5), wiSays(WIDependencyFailed)),
			wiOp(0, 28, 29, wiSub("d", 0, "i-zz", 5), wiSays(WIDependencyMissing)),
			wiOp(0, 30, 31, wiDone("i-b", 1, 30), wiSays(WIConflict)), // cancelled under this claim
		}},
		{"the in-flight cap", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 2), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 0, "", 2), wiAdmitted(2, 2)),
			wiOp(0, 4, 5, wiSub("c", 0, "", 2), wiSays(WIExhausted)),
			wiOp(0, 6, 7, wiCancelIn("i-a"), wiSays(WIOK)),
			wiOp(0, 8, 9, wiSub("c", 0, "", 2), wiAdmitted(3, 2)),
		}},
		{"concurrent submits of one key: one admits, the other replays", []porcupine.Operation{
			wiOp(0, 0, 10, wiSub("a", 0, "", 5), WIOutput{Decision: WIReplayed, Seq: 1, InFlight: 1}),
			wiOp(1, 1, 9, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
		}},
		{"concurrent claims take items in their linearization order", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 1, "", 5), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 0, "", 5), wiAdmitted(2, 2)),
			wiOp(1, 4, 10, wiClaimIn(), wiClaimed("i-b", 1, 8)),
			wiOp(2, 5, 9, wiClaimIn(), wiClaimed("i-a", 1, 7)),
		}},
		{"a cancel cascades to a pending dependent", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 0, "i-a", 5), wiAdmitted(2, 2)),
			wiOp(0, 4, 5, wiCancelIn("i-a"), wiSays(WIOK)),
			wiOp(0, 6, 7, wiSub("c", 0, "", 1), wiAdmitted(3, 1)),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkWI(t, tc.ops); res != porcupine.Ok {
				t.Fatalf("legal history judged %s", res)
			}
		})
	}
}

func TestWorkItemModelRejectsNonLinearizableHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
	}{
		{"a sequence allocated twice", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(1, 2, 3, wiSub("b", 0, "", 5), wiAdmitted(1, 2)),
		}},
		{"a sequence skipped by a refusal", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 1), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 0, "", 1), wiSays(WIExhausted)),
			wiOp(0, 4, 5, wiCancelIn("i-a"), wiSays(WIOK)),
			wiOp(0, 6, 7, wiSub("c", 0, "", 1), wiAdmitted(3, 1)),
		}},
		{"in flight above the cap", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 1), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 0, "", 1), wiAdmitted(2, 2)),
		}},
		{"two holders of one attempt", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(1, 2, 10, wiClaimIn(), wiClaimed("i-a", 1, 5)),
			wiOp(2, 3, 9, wiClaimIn(), wiClaimed("i-a", 1, 6)),
		}},
		{"a fence handed out again", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 0, "", 5), wiAdmitted(2, 2)),
			wiOp(0, 4, 5, wiClaimIn(), wiClaimed("i-a", 1, 5)),
			wiOp(0, 6, 7, wiClaimIn(), wiClaimed("i-b", 1, 5)),
		}},
		{"a dependent claimed before its dependency succeeded", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("b", 9, "i-a", 5), wiAdmitted(2, 2)),
			wiOp(0, 4, 5, wiClaimIn(), wiClaimed("i-b", 1, 5)),
		}},
		{"a stale fence completes", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiClaimIn(), wiClaimed("i-a", 1, 5)),
			wiOp(0, 4, 5, wiDone("i-a", 1, 4), wiSays(WIOK)),
		}},
		{"an acknowledged item missing from a later list", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(1, 2, 3, wiListIn(), WIOutput{List: ""}),
		}},
		{"a replay with another sequence", []porcupine.Operation{
			wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
			wiOp(0, 2, 3, wiSub("a", 0, "", 5), WIOutput{Decision: WIReplayed, Seq: 2, InFlight: 2}),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := checkWI(t, tc.ops); res != porcupine.Illegal {
				t.Fatalf("non-linearizable history judged %s", res)
			}
		})
	}
}

func TestWorkItemModelUnknownOutcomes(t *testing.T) {
	// A claim whose outcome is unknown may hold the item nobody else gets.
	held := []porcupine.Operation{
		wiOp(0, 0, 1, wiSub("a", 0, "", 5), wiAdmitted(1, 1)),
		wiOp(1, 2, Pending, wiClaimIn(), UnknownOutput{}),
		wiOp(2, 3, 4, wiClaimIn(), wiSays(WINotFound)),
		wiOp(2, 5, 6, wiListIn(), WIOutput{List: "i-a:claimed:1:true"}),
	}
	if res := checkWI(t, held); res != porcupine.Ok {
		t.Fatalf("an unknown claim that was applied: %s", res)
	}
	// An unknown submit explains an admission a replay then reports.
	replayed := []porcupine.Operation{
		wiOp(0, 0, Pending, wiSub("a", 0, "", 5), UnknownOutput{}),
		wiOp(0, 2, 3, wiSub("a", 0, "", 5), WIOutput{Decision: WIReplayed, Seq: 1, InFlight: 1}),
	}
	if res := checkWI(t, replayed); res != porcupine.Ok {
		t.Fatalf("an unknown submit replayed: %s", res)
	}
	// But it does not explain a sequence taken before its call.
	early := []porcupine.Operation{
		wiOp(1, 0, 1, wiSub("b", 0, "", 5), wiAdmitted(2, 2)),
		wiOp(0, 2, Pending, wiSub("a", 0, "", 5), UnknownOutput{}),
	}
	if res := checkWI(t, early); res != porcupine.Illegal {
		t.Fatalf("an unknown submit linearized before its call: %s", res)
	}
}

// TestWorkItemModelAgreesWithService runs random sequential calls against
// the real work-item service over a bare FSM and requires every decided
// output to be the one the model's step accepts: the model is checked
// against the implementation before it is trusted to judge histories.
func TestWorkItemModelAgreesWithService(t *testing.T) {
	ctx := context.Background()
	l, err := fsmtest.New(workitem.Module())
	if err != nil {
		t.Fatal(err)
	}
	svc := workitem.NewService(l, l)
	m := WorkItemModel()
	state := m.Init()
	type held struct {
		id      string
		attempt int64
		fence   uint64
	}
	var holding []held
	next := 0
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 800; i++ {
		var in WIInput
		var out WIOutput
		switch p := rng.IntN(10); {
		case p < 4:
			n, variant := next, 0
			if next > 0 && rng.IntN(4) == 0 {
				n = rng.IntN(next)
				variant = rng.IntN(2)
			} else {
				next++
			}
			in = WIInput{Kind: WISubmit, Tenant: "t", Key: fmt.Sprintf("k%d", n), Variant: variant, ID: fmt.Sprintf("i%d", n),
				Priority: int64(n%3 + 5*variant), Cap: int64(3 + n%4)}
			if n%3 == 2 {
				in.Dep = fmt.Sprintf("i%d", n-1)
			}
			r := workitem.SubmitRequest{TenantRef: "t", WorkItemID: in.ID, IdempotencyKey: in.Key, CommandDigest: "sha256:" + strings.Repeat("c", 64),
				Kind: "k", Priority: in.Priority, InputRef: "in", PolicyDigest: "sha256:" + strings.Repeat("1", 64), CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64), MaxAttempts: 3, MaxTenantInFlight: in.Cap}
			if in.Dep != "" {
				r.DependsOn = []string{in.Dep}
			}
			res, err := svc.Submit(ctx, r)
			switch e := errs.From(err); {
			case err == nil && res.Replayed:
				out = WIOutput{Decision: WIReplayed, Seq: res.CommandSequence, InFlight: res.Quota.InFlight}
			case err == nil:
				out = WIOutput{Decision: WIOK, Seq: res.CommandSequence, InFlight: res.Quota.InFlight}
			case e.Code == errs.CodeInvalid:
				out = WIOutput{Decision: e.Detail["reason"].(string)}
			default:
				out = WIOutput{Decision: string(e.Code)}
			}
		case p < 6:
			in = WIInput{Kind: WIClaim, Tenant: "t"}
			res, err := svc.Claim(ctx, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", TTLMs: 3_600_000})
			if err != nil {
				out = WIOutput{Decision: string(errs.CodeOf(err))}
				break
			}
			out = WIOutput{Decision: WIOK, ID: res.WorkItem.WorkItemID, Attempt: res.Attempt, Fence: res.Fence}
			holding = append(holding, held{res.WorkItem.WorkItemID, res.Attempt, res.Fence})
		case p < 8 && len(holding) > 0:
			h := holding[rng.IntN(len(holding))]
			if rng.IntN(4) == 0 {
				h.fence--
			}
			in = WIInput{Kind: WIComplete, Tenant: "t", ID: h.id, Attempt: h.attempt, Fence: h.fence}
			_, err := svc.Complete(ctx, workitem.CompleteRequest{TenantRef: "t", WorkItemID: h.id, Attempt: h.attempt, Fence: h.fence, Outcome: "succeeded"})
			out = WIOutput{Decision: WIOK}
			if err != nil {
				out.Decision = string(errs.CodeOf(err))
			}
		case p < 9 && next > 0:
			in = WIInput{Kind: WICancel, Tenant: "t", ID: fmt.Sprintf("i%d", rng.IntN(next+1))}
			_, err := svc.Cancel(ctx, workitem.CancelRequest{TenantRef: "t", WorkItemID: in.ID, Reason: "r"})
			out = WIOutput{Decision: WIOK}
			if err != nil {
				out.Decision = string(errs.CodeOf(err))
			}
		default:
			in = WIInput{Kind: WIList, Tenant: "t"}
			page, err := svc.List(ctx, workitem.ListRequest{TenantRef: "t", Limit: workitem.MaxPage}, fsm.Linearizable)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, it := range page.WorkItems {
				parts = append(parts, fmt.Sprintf("%s:%s:%d:%t", it.WorkItemID, it.Status, it.Attempt, it.Dependencies.Satisfied == it.Dependencies.Total))
			}
			out = WIOutput{List: strings.Join(parts, ";")}
		}
		ok, nextState := m.Step(state, in, out)
		if !ok {
			t.Fatalf("step %d: %s: the model does not accept what the service answered; state %s",
				i, m.DescribeOperation(in, out), m.DescribeState(state))
		}
		state = nextState
	}
}

// TestWorkItemModelStatesBeyondOneListPage is the regression test of three
// Illegal soak histories (2026-12-01): the model compared states by their
// description, which showed only the first page of items, so two states
// that differ past item 128 were one state to porcupine's cache, and a
// linearizable history was refused. Here an unknown claim races a submit
// past the first page: linearized before the submit it takes the old
// item, after it the new one (higher priority). A later claim shows which
// happened; both answers are linearizable.
func TestWorkItemModelStatesBeyondOneListPage(t *testing.T) {
	prefix := func() []porcupine.Operation {
		var ops []porcupine.Operation
		for i := range wiListPage {
			key := fmt.Sprintf("done%d", i)
			ops = append(ops,
				wiOp(0, int64(4*i), int64(4*i+1), wiSub(key, 0, "", 5), wiAdmitted(uint64(i+1), 1)),
				wiOp(0, int64(4*i+2), int64(4*i+3), wiCancelIn("i-"+key), wiSays(WIOK)))
		}
		return ops
	}
	t0 := int64(4 * wiListPage)
	for _, later := range []string{"i-old", "i-new"} {
		t.Run("the later claim takes "+later, func(t *testing.T) {
			ops := append(prefix(),
				wiOp(0, t0, t0+1, wiSub("old", 0, "", 5), wiAdmitted(wiListPage+1, 1)),
				wiOp(1, t0+2, Pending, wiClaimIn(), UnknownOutput{}),
				wiOp(0, t0+3, t0+4, wiSub("new", 1, "", 5), wiAdmitted(wiListPage+2, 2)),
				wiOp(0, t0+5, t0+6, wiClaimIn(), wiClaimed(later, 1, 99)),
			)
			if res := checkWI(t, ops); res != porcupine.Ok {
				t.Fatalf("a linearizable history is %s", res)
			}
		})
	}
	t.Run("two claims cannot take one item", func(t *testing.T) {
		ops := append(prefix(),
			wiOp(0, t0, t0+1, wiSub("old", 0, "", 5), wiAdmitted(wiListPage+1, 1)),
			wiOp(0, t0+2, t0+3, wiClaimIn(), wiClaimed("i-old", 1, 98)),
			wiOp(0, t0+5, t0+6, wiClaimIn(), wiClaimed("i-old", 1, 99)),
		)
		if res := checkWI(t, ops); res != porcupine.Illegal {
			t.Fatalf("a history with one item claimed twice is %s", res)
		}
	})
}

func TestWorkItemModelEqualSeesEveryItem(t *testing.T) {
	var a wiTenant
	for i := range wiListPage + 1 {
		a.Items = append(a.Items, wiItem{ID: fmt.Sprintf("i%d", i), Status: "pending", Ready: true})
	}
	b := a.clone()
	b.Items[wiListPage].Status, b.Items[wiListPage].Attempt = "claimed", 1
	m := WorkItemModel()
	if m.Equal(a, b) {
		t.Fatalf("states that differ in item %d are Equal", wiListPage+1)
	}
	if same := a.clone(); !m.Equal(a, same) || m.Hash(a) != m.Hash(same) {
		t.Fatalf("a state and its copy are not Equal or hash apart")
	}
}
