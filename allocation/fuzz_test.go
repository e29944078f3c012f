package allocation

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

var fuzzTypes = []log.Type{CmdPutSpace, CmdCreateTask, CmdWindow, CmdReserve, CmdCommit, CmdAbort, CmdRelease,
	CmdTransition, CmdSupersede, CmdHold, CmdPostNote}

var fuzzPrincipals = []identity.Principal{
	{},
	{ID: "m1", Tenants: []string{"s"}, Roles: []string{identity.RoleMember}},
	{ID: "r", Tenants: []string{"s"}, Roles: []string{identity.RoleReader}},
	{ID: "ctl", Tenants: []string{"*"}, Roles: []string{identity.RoleController}},
	{ID: "o", Tenants: []string{"other"}, Roles: []string{identity.RoleMember}},
}

// fuzzSeed is the log of the state every fuzz input starts from: a space
// with a catalog, tasks open, claimed, done and superseded, a note, a live
// reservation, a committed one and an expired one. The seed at version 2
// (v2: the cluster enabled this binary's versions) adds a duplicate, a
// survivor holding an inherited key and a finished task under hold that
// holds its key.
type fuzzSeed struct {
	log []*raft.Log
	now int64
}

func newFuzzSeed(t testing.TB, v2 bool) fuzzSeed {
	l, err := fsmtest.New(Module())
	if err != nil {
		t.Fatal(err)
	}
	if v2 {
		if err := l.Enable(fsm.ServedBy(Module())); err != nil {
			t.Fatal(err)
		}
	}
	s := NewService(l, l)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	catalog := []CatalogRow{
		{WorkItemID: "T1", CanonicalTitle: "Comparative survey of orchestration harnesses", Aliases: []string{"literature review"}},
		{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry of looping agents"}}
	if v2 { // where an unlisted work item is 422
		catalog = append(catalog, CatalogRow{WorkItemID: "T7", CanonicalTitle: "other"})
	}
	must(s.PutSpace(ctx, "s", PutSpaceRequest{Catalog: catalog, DeliveryModes: []string{"result", "draft"}, WindowMs: 1000}))
	must(s.CreateTask(ctx, "s", CreateTaskRequest{Title: "survey orchestration harnesses", DeliveryMode: "result", IdempotencyKey: "k1"}))
	must(s.CreateTask(ctx, "s", CreateTaskRequest{Title: "looping agents stopping re-entry", DeliveryMode: "result"}))
	must(s.CreateTask(ctx, "s", CreateTaskRequest{Title: "unrelated", DeliveryMode: "draft"}))
	must(s.CreateTask(ctx, "s", CreateTaskRequest{Title: "other", DeliveryMode: "result", WorkItemID: ptrTo("T7")}))
	must(s.Transition(ctx, "s", 2, TransitionRequest{Action: ActionClaim}))
	must(s.Transition(ctx, "s", 3, TransitionRequest{Action: ActionWithdraw}))
	must(s.Supersede(ctx, "s", 4, SupersedeRequest{SurvivingTask: 1, Reason: "allocation_duplicate"}))
	must(s.PostNote(ctx, "s", 1, NoteRequest{Kind: KindPostReviewNote, Body: "x", DeliveryMode: "result", IdempotencyKey: "n1"}))
	must(s.Reserve(ctx, "s", ReserveRequest{ProposalID: "old", Title: "gone", DeliveryMode: "result"}))
	must(s.Reserve(ctx, "s", ReserveRequest{ProposalID: "ext", Title: "external", DeliveryMode: "result"}))
	must(s.Commit(ctx, "s", "ext", CommitRequest{Winner: &Winner{Type: "issue", ID: StrID("GH-1")}}))
	if v2 {
		must(s.CreateTask(ctx, "s", CreateTaskRequest{Title: "zeta survey orchestration", DeliveryMode: "result"}))
		must(s.PutSpace(ctx, "s", PutSpaceRequest{Catalog: []CatalogRow{
			{WorkItemID: "T1", CanonicalTitle: "Comparative survey of orchestration harnesses", Aliases: []string{"literature review", "zeta"}},
			{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry of looping agents"}, {WorkItemID: "T7", CanonicalTitle: "other"}},
			DeliveryModes: []string{"result", "draft"}, WindowMs: 1000}))
		must(s.Hold(ctx, "s", 3, HoldRequest{Hold: true}))
	}
	l.Advance(2 * time.Second)
	must(s.Reserve(ctx, "s", ReserveRequest{ProposalID: "live", Title: "pending", DeliveryMode: "draft"}))
	return fuzzSeed{log: l.Log(), now: fsmtest.Epoch + 2000}
}

func (s fuzzSeed) replica(t testing.TB) *fsm.FSM {
	f, err := fsm.New(fsm.Config{Modules: []fsm.Module{Module()}})
	if err != nil {
		t.Fatal(err)
	}
	f.ApplyBatch(s.log)
	return f
}

func ptrTo[T any](v T) *T { return &v }

func fuzzPayloads() map[log.Type][]any {
	one := int64(1)
	return map[log.Type][]any{
		CmdPutSpace:   {putSpaceCmd{Slug: "s", Catalog: []CatalogRow{{WorkItemID: "t01", CanonicalTitle: "a b c"}}}, putSpaceCmd{Slug: "n", DeliveryModes: []string{}}},
		CmdCreateTask: {createCmd{Space: "s", Intent: Intent{Title: "survey harnesses", DeliveryMode: "result"}, IdempotencyKey: "k1"}, createCmd{Space: "s", Intent: Intent{Title: "gone", DeliveryMode: "result"}}},
		CmdWindow: {windowCmd{Space: "s", Proposals: []Proposal{{ProposalID: "a", Title: "Survey", DeliveryMode: "result", ReceivedSeq: ptrTo(uint64(2))},
			{ProposalID: "b", Title: "stopping agents", DeliveryMode: "result"}, {ProposalID: "c", Title: "", DeliveryMode: "x"}}}},
		CmdReserve:    {reserveCmd{Space: "s", ProposalID: "p", Intent: Intent{Title: "pending", DeliveryMode: "draft"}}, reserveCmd{Space: "s", ProposalID: "old", Intent: Intent{Title: "gone", DeliveryMode: "result"}}},
		CmdCommit:     {reservationCmd{Space: "s", ProposalID: "live", Winner: &Winner{Type: "issue", ID: NumID(7)}}, reservationCmd{Space: "s", ProposalID: "old", Winner: &Winner{Type: "x", ID: StrID("y")}}},
		CmdAbort:      {reservationCmd{Space: "s", ProposalID: "live"}, reservationCmd{Space: "s", ProposalID: "old"}},
		CmdRelease:    {reservationCmd{Space: "s", ProposalID: "ext"}},
		CmdTransition: {transitionCmd{Space: "s", TaskID: 3, Action: ActionReopen}, transitionCmd{Space: "s", TaskID: 2, Action: ActionDone, ExpectedVersion: ptrTo(uint64(2))}, transitionCmd{Space: "s", TaskID: 4, Action: ActionClaim}},
		CmdSupersede:  {supersedeCmd{Space: "s", TaskID: 2, SurvivingTask: 1, Reason: "dup"}},
		CmdHold:       {holdCmd{Space: "s", TaskID: 3, Hold: true}},
		CmdPostNote:   {noteCmd{Space: "s", TaskID: 1, Kind: KindPostReviewNote, Body: "x", DeliveryMode: "result"}, noteCmd{Space: "s", TaskID: 2, Kind: KindPostReviewNote, CriterionIndex: &one, Body: "y", DeliveryMode: "draft", IdempotencyKey: "n1"}},
	}
}

// FuzzApplyAllocation applies arbitrary payload bytes, wrapped in a valid
// envelope of each allocation command type, after the seed state.
//
// Whatever the bytes: no panic; the stored tables keep their invariants
// (one occupant per key, every live task and note holding its key, ...);
// a failure, a replay or a 409 changes no allocation table; and a second
// replica applying the same entry reaches the same state.
func FuzzApplyAllocation(f *testing.F) {
	for typ, payloads := range fuzzPayloads() {
		kind := uint8(0)
		for k, ft := range fuzzTypes {
			if ft == typ {
				kind = uint8(k)
			}
		}
		for i, p := range payloads {
			b := log.MustMarshal(p)
			flipped := bytes.Clone(b)
			flipped[len(b)/2] ^= 0x01
			for j, v := range [][]byte{b, b[:len(b)-1], flipped} {
				f.Add(kind, v, uint8(i+j), uint16(i*700))
			}
		}
		f.Add(kind, []byte{0x80}, uint8(0), uint16(0))
		f.Add(kind, []byte(strings.Repeat("\x91", 100)), uint8(1), uint16(0))
	}
	seeds := []fuzzSeed{newFuzzSeed(f, false), newFuzzSeed(f, true)}
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte, who uint8, advance uint16) {
		for _, seed := range seeds {
			fuzzOne(t, seed, kind, payload, who, advance)
		}
	})
}

// fuzzOne applies one fuzz input after seed and checks what
// FuzzApplyAllocation promises.
func fuzzOne(t *testing.T, seed fuzzSeed, kind uint8, payload []byte, who uint8, advance uint16) {
	{
		cmd := log.Command{Type: fuzzTypes[int(kind)%len(fuzzTypes)], Version: 1, Stamp: seed.now + int64(advance),
			Principal: fuzzPrincipals[int(who)%len(fuzzPrincipals)], Payload: payload}
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
		after := readStored(t, a)
		if bad := after.invariants(a.Now()); len(bad) > 0 {
			t.Fatalf("invariants broken after %d: %v", cmd.Type, bad)
		}
		unchanged := res.Err != nil
		if !unchanged {
			var out Outcome
			if log.Unmarshal(res.Result, &out) == nil && (out.Conflict != nil || out.Replayed) && cmd.Type != CmdWindow {
				unchanged = true
			}
		}
		if unchanged && after.digest() != before.digest() {
			t.Fatalf("a failed, replayed or losing command (%v) changed the state", res.Err)
		}
		b := seed.replica(t)
		resB := b.Apply(entry).(*fsm.Response)
		if (res.Err == nil) != (resB.Err == nil) || !bytes.Equal(res.Result, resB.Result) {
			t.Fatalf("replicas answered differently")
		}
		_, ha, errA := a.StateHash()
		_, hb, errB := b.StateHash()
		if errA != nil || errB != nil || ha != hb {
			t.Fatalf("replicas reached different states after the same entry (%v %v)", errA, errB)
		}
	}
}

// The seeds themselves keep every invariant; the version 2 seed holds
// what it promises.
func TestFuzzSeedInvariants(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		seed := newFuzzSeed(t, v2)
		f := seed.replica(t)
		st := readStored(t, f)
		if bad := st.invariants(f.Now()); len(bad) > 0 {
			t.Fatal(bad)
		}
		tasks := 4
		if v2 {
			tasks = 5
		}
		if len(st.tasks) != tasks || len(st.notes) != 1 || len(st.reservations) != 3 {
			t.Fatalf("seed: %d tasks, %d notes, %d reservations", len(st.tasks), len(st.notes), len(st.reservations))
		}
		if !v2 {
			continue
		}
		held := map[string]string{}
		for _, o := range st.occupancy {
			held[o.Target] = o.WinnerType + ":" + o.WinnerID.String()
		}
		if len(st.dups) != 1 || st.dups[0].TaskID != 5 || held["task:s:slot:T7"] != "task:1" || held["task:s:unrelated"] != "task:3" {
			t.Fatalf("version 2 seed: duplicates %+v, occupancy %v", st.dups, held)
		}
	}
}
