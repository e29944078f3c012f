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
	"github.com/arbiterhq/arbiter/workitem/extension"
	"github.com/hashicorp/raft"
)

// resFuzzTypes are the command types FuzzApplyReservation wraps
// payloads in: the reservation commands, and those that end a claim or
// admit an extension (and Tick, which ends claims and decays debts).
var resFuzzTypes = []log.Type{workitem.CmdPutHost, workitem.CmdTelemetry, workitem.CmdSetProfiles, workitem.CmdReserve, workitem.CmdRelease,
	workitem.CmdReclaim, workitem.CmdRewriteExtension, workitem.CmdSubmit, workitem.CmdComplete, workitem.CmdCancel, fsm.CmdTick}

var resFuzzPrincipals = []identity.Principal{{}, member, member2, reader, ctl, outsider, fleet, ops}

// resSeed is the log of the state every input starts from: the commands
// enabled, two profiles, two hosts with telemetry, an item holding a
// reservation, one whose reservation was released, a claimed item
// without one, a legacy item without the extension, a fairness debt.
func resSeed(t testing.TB) wiSeed {
	l, s := newEnabled(t)
	setup(t, s)
	a := claimed(t, s, "a", baseExt(), time.Hour)
	if _, err := s.Reserve(as(member), reserveOf(a, "h1")); err != nil {
		t.Fatal(err)
	}
	e := baseExt()
	e.BaseRef, e.AntiAffinity = "b", []string{"gpu"}
	b := claimed(t, s, "b", e, time.Hour)
	rb, err := s.Reserve(as(member), reserveOf(b, ""))
	noErr(t, "reserve b", err)
	_, err = s.Release(as(member), workitem.ReleaseRequest{TenantRef: "t", WorkItemID: "b", Attempt: b.Attempt, Fence: b.Fence, ReservationID: rb.Reservation.ReservationID})
	noErr(t, "release b", err)
	e.BaseRef = "c"
	claimed(t, s, "c", e, 2*time.Second)
	r := req("legacy")
	r.WorkItemID = "legacy"
	mustSubmit(t, s, r)
	l.Advance(time.Second)
	return wiSeed{log: l.Log(), now: fsmtest.Epoch + 1000, scope: scopeOf(l, "t", "default")}
}

func resFuzzPayloads(t testing.TB) map[log.Type][][]byte {
	_, ext, err := extension.Seal(baseExt())
	noErr(t, "seal", err)
	valid := map[log.Type][]any{
		workitem.CmdPutHost: {
			map[string]any{"host_id": "h3", "labels": map[string]string{"zone": "c"}, "capacity": map[string]int64{"cpu_millis": 1, "memory_mib": 1, "disk_mib": 1, "processes": 1}, "expected_epoch": nil},
			map[string]any{"host_id": "h1", "labels": nil, "capacity": map[string]int64{"cpu_millis": 999}, "expected_epoch": uint64(3)},
		},
		workitem.CmdTelemetry:   {map[string]any{"host_id": "h2", "report_seq": 9, "disk_free_mib": 5}},
		workitem.CmdSetProfiles: {map[string]any{"profiles": []workitem.Profile{completeProfile("p", "v1"), {Name: "q", Version: "1", Mode: "dark"}}}},
		workitem.CmdReserve: {
			map[string]any{"tenant_ref": "t", "work_item_id": "c", "attempt": 1, "fence": 0, "host_id": ""},
			map[string]any{"tenant_ref": "t", "work_item_id": "a", "attempt": 1, "fence": 8, "host_id": "h2"},
		},
		workitem.CmdRelease:          {map[string]any{"tenant_ref": "t", "work_item_id": "a", "attempt": 1, "fence": 8, "reservation_id": "rsv-9"}},
		workitem.CmdReclaim:          {map[string]any{"tenant_ref": "", "host_id": "h1", "max_count": 2, "cursor": ""}},
		workitem.CmdRewriteExtension: {map[string]any{"tenant_ref": "t", "work_item_id": "legacy", "fence": 0, "extension": []byte(ext)}},
		workitem.CmdSubmit: {func() rawSubmit {
			r := validRaw()
			r.Item.WorkItemID, r.Item.Metadata = "new", []byte(`{"resource_reservation":`+string(ext)+`}`)
			return r
		}()},
		workitem.CmdComplete: {map[string]any{"tenant_ref": "t", "work_item_id": "a", "attempt": 1, "fence": 8, "outcome": "succeeded", "result_ref": ""}},
		workitem.CmdCancel:   {map[string]any{"tenant_ref": "t", "work_item_id": "a", "reason": "r"}},
		fsm.CmdTick:          {fsm.Tick{Budget: 2, FeedRetain: 16, IdemRetentionMs: 1000}},
	}
	return fsmtest.PayloadVariants(valid)
}

// FuzzApplyReservation applies arbitrary payload bytes, wrapped in a
// valid envelope of each reservation command type (and of the commands
// that end claims, admit extensions or tick), after the seed state, as
// any principal, at a later FSM time.
//
// Whatever the bytes: no panic; the work-item and reservation tables
// keep every invariant (no host over capacity, keys as the active
// reservations hold them, no reservation outliving its claim); a
// failure changes nothing but FSM bookkeeping; and a second replica
// applying the same entry reaches the same state.
func FuzzApplyReservation(f *testing.F) {
	for typ, payloads := range resFuzzPayloads(f) {
		k := 0
		for i, t := range resFuzzTypes {
			if t == typ {
				k = i
			}
		}
		for i, p := range payloads {
			f.Add(uint8(k), p, uint8(i), uint32(i*1499))
		}
	}
	seed := resSeed(f)
	notMeta := func(table string) bool { return table != "meta" }
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte, who uint8, advance uint32) {
		typ := resFuzzTypes[int(kind)%len(resFuzzTypes)]
		cmd := log.Command{Type: typ, Version: 1, Stamp: seed.now + int64(advance),
			Principal: resFuzzPrincipals[int(who)%len(resFuzzPrincipals)], Payload: payload}
		if typ == workitem.CmdSubmit {
			cmd.IdemScope, cmd.IdemKey = seed.scope, "fuzz-key"
		}
		data, err := log.Encode(cmd)
		if err != nil {
			t.Skip("not a valid envelope:", err)
		}
		a := seed.replica(t)
		before := readRes(t, a)
		entry := &raft.Log{Index: a.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}
		res, ok := a.Apply(entry).(*fsm.Response)
		if !ok || res == nil {
			t.Fatalf("Apply returned no *fsm.Response")
		}
		if n := a.Panics(); n != 0 {
			t.Fatalf("%d handler panics", n)
		}
		after := checkRes(t, a)
		if res.Err != nil && after.Digest(notMeta) != before.Digest(notMeta) {
			t.Fatalf("a failed command (%v) changed the state", res.Err)
		}
		if res.Err != nil && res.Err.Code == "internal" {
			t.Fatalf("an internal error: %v", res.Err)
		}
		b := seed.replica(t)
		resB := b.Apply(entry).(*fsm.Response)
		if errCode(res) != errCode(resB) || !bytes.Equal(res.Result, resB.Result) {
			t.Fatalf("replicas answered %v and %v", res.Err, resB.Err)
		}
		_, ha, errA := a.StateHash()
		_, hb, errB := b.StateHash()
		if errA != nil || errB != nil || ha != hb {
			t.Fatalf("replicas reached different states after the same entry (%v %v)", errA, errB)
		}
	})
}
