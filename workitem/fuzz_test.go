package workitem_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/hashicorp/raft"
)

// fuzzTypes are the command types the fuzz target wraps payloads in
// (Tick too: the module's tick runs on whatever state a command left).
var fuzzTypes = []log.Type{workitem.CmdSubmit, workitem.CmdSubmitBatch, workitem.CmdClaim, workitem.CmdComplete, workitem.CmdCancel, fsm.CmdTick}

var fuzzPrincipals = []identity.Principal{{}, member, member2, reader, ctl, outsider}

// wiSeed is the log of the state every fuzz input starts from: items in
// two tenants and two graphs, dependencies waiting and satisfied, a
// claim, ended items with their cascade done and one still queued, a
// deadline, keyed results in the ledger.
type wiSeed struct {
	log   []*raft.Log
	now   int64
	scope string // the admission scope of (t, default) the seed's state takes
}

func newSeed(t testing.TB) wiSeed {
	l, s := newService(t)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a := mustSubmit(t, s, req("a"))
	b := mustSubmit(t, s, req("b", a.WorkItemID))
	named := req("named")
	named.WorkItemID, named.Priority = "x1", 5
	d := fsmtest.Epoch/1000 + 3600
	named.DeadlineUnix = &d
	mustSubmit(t, s, named)
	must(s.SubmitBatch(bg, workitem.BatchRequest{TenantRef: "t", GraphRef: "g2", IdempotencyKey: "batch",
		Requests: []workitem.SubmitRequest{req(""), req("", b.WorkItemID)}}))
	u := req("u")
	u.TenantRef = "u"
	mustSubmit(t, s, u)
	c := mustClaim(t, s, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: a.WorkItemID, TTLMs: 60_000})
	must(s.Complete(bg, workitem.CompleteRequest{TenantRef: "t", WorkItemID: a.WorkItemID, Attempt: 1, Fence: c.Fence, Outcome: workitem.StatusSucceeded}))
	must(s.Claim(as(member), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "m", WorkItemID: "x1", TTLMs: 1000, IdempotencyKey: "ck"}))
	l.Advance(time.Second)
	must(s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: "wi-4-0", Reason: "r"}))
	return wiSeed{log: l.Log(), now: fsmtest.Epoch + 1000, scope: scopeOf(l, "t", "default")}
}

func (s wiSeed) replica(t testing.TB) *fsm.FSM {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{workitem.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	f.ApplyBatch(s.log)
	return f
}

// fuzzPayloads are valid payloads of each command type, and broken ones.
func fuzzPayloads() map[log.Type][][]byte {
	item := validRaw().Item
	dep := item
	dep.DependsOn = []string{"wi-2-0", "x1"}
	valid := map[log.Type][]any{
		workitem.CmdSubmit: {validRaw(), rawSubmit{TenantRef: "t", GraphRef: "default", Item: dep}},
		workitem.CmdSubmitBatch: {struct {
			TenantRef string    `msgpack:"tenant_ref"`
			GraphRef  string    `msgpack:"graph_ref"`
			Items     []rawItem `msgpack:"items"`
		}{"t", "g2", []rawItem{item, dep}}},
		workitem.CmdClaim: {
			map[string]any{"tenant_ref": "t", "graph_ref": "default", "owner_ref": "w", "kinds": []string{"build"}, "work_item_id": "", "ttl_ms": 1000},
			map[string]any{"tenant_ref": "t", "graph_ref": "g2", "owner_ref": "w", "kinds": nil, "work_item_id": "wi-4-1", "ttl_ms": 1},
		},
		workitem.CmdComplete: {
			map[string]any{"tenant_ref": "t", "work_item_id": "x1", "attempt": 1, "fence": 8, "outcome": "succeeded", "result_ref": ""},
			map[string]any{"tenant_ref": "t", "work_item_id": "wi-1-0", "attempt": 1, "fence": 6, "outcome": "succeeded", "result_ref": ""},
		},
		workitem.CmdCancel: {
			map[string]any{"tenant_ref": "t", "work_item_id": "wi-2-0", "reason": "r"},
			map[string]any{"tenant_ref": "u", "work_item_id": "wi-5-0", "reason": "r"},
		},
		fsm.CmdTick: {fsm.Tick{Budget: 2, FeedRetain: 16, IdemRetentionMs: 1000}},
	}
	return fsmtest.PayloadVariants(valid)
}

// FuzzApplyWorkItem applies arbitrary payload bytes, wrapped in a valid
// envelope of each work-item command type (and of Tick), after the seed
// state, as any principal, with or without an idempotency key, at a
// later FSM time.
//
// Whatever the bytes: no panic, recovered or not; the work-item tables
// keep every invariant; a failure (or a replay) changes nothing but FSM
// bookkeeping; and a second replica applying the same entry reaches the
// same state.
func FuzzApplyWorkItem(f *testing.F) {
	for typ, payloads := range fuzzPayloads() {
		k := 0
		for i, t := range fuzzTypes {
			if t == typ {
				k = i
			}
		}
		for i, p := range payloads {
			key := ""
			if i%2 == 0 && typ != fsm.CmdTick {
				key = "fuzz-key"
			}
			f.Add(uint8(k), p, uint8(i), key, uint32(i*997))
		}
	}
	seed := newSeed(f)
	scope := seed.scope
	notMeta := func(table string) bool { return table != "meta" }
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte, who uint8, key string, advance uint32) {
		cmd := log.Command{Type: fuzzTypes[int(kind)%len(fuzzTypes)], Version: 1, Stamp: seed.now + int64(advance),
			Principal: fuzzPrincipals[int(who)%len(fuzzPrincipals)], Payload: payload}
		if key != "" {
			cmd.IdemScope, cmd.IdemKey = scope, key
		}
		data, err := log.Encode(cmd)
		if err != nil {
			t.Skip("not a valid envelope:", err)
		}
		a := seed.replica(t)
		before := readStored(t, a)
		entry := &raft.Log{Index: a.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}
		res, ok := a.Apply(entry).(*fsm.Response)
		if !ok || res == nil {
			t.Fatalf("Apply returned no *fsm.Response")
		}
		if n := a.Panics(); n != 0 {
			t.Fatalf("%d handler panics", n)
		}
		after := checkStored(t, a)
		if (res.Err != nil || res.Replayed) && after.Digest(notMeta) != before.Digest(notMeta) {
			t.Fatalf("a failed or replayed command (%v, replayed %t) changed the state", res.Err, res.Replayed)
		}
		if res.Err != nil && res.Err.Code == "internal" {
			t.Fatalf("an internal error: %v", res.Err)
		}
		b := seed.replica(t)
		resB := b.Apply(entry).(*fsm.Response)
		if errCode(res) != errCode(resB) || res.Replayed != resB.Replayed || !bytes.Equal(res.Result, resB.Result) {
			t.Fatalf("replicas answered %v/%t and %v/%t", res.Err, res.Replayed, resB.Err, resB.Replayed)
		}
		_, ha, errA := a.StateHash()
		_, hb, errB := b.StateHash()
		if errA != nil || errB != nil || ha != hb {
			t.Fatalf("replicas reached different states after the same entry (%v %v)", errA, errB)
		}
	})
}

func errCode(r *fsm.Response) string {
	if r.Err == nil {
		return ""
	}
	return string(r.Err.Code)
}
