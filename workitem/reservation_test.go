package workitem_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
	"github.com/google/go-cmp/cmp"
)

// refusedFSM requires call to fail with code (and detail.reason, if
// set) and to leave the content hash (every row but bookkeeping) as it
// was.
func refusedFSM(t *testing.T, l *fsmtest.Local, what string, code errs.Code, reasonWant string, call func() error) *errs.Error {
	t.Helper()
	before := contentHash(t, l.FSM)
	err := call()
	e := errs.From(err)
	if e == nil || e.Code != code || (reasonWant != "" && reason(err) != reasonWant) {
		t.Fatalf("%s: %v (detail %v), want %s %s", what, err, detailOf(err), code, reasonWant)
	}
	if after := contentHash(t, l.FSM); after != before {
		t.Fatalf("%s: the refusal changed the state", what)
	}
	checkRes(t, l.FSM)
	return e
}

func detailOf(err error) map[string]any {
	if e := errs.From(err); e != nil {
		return e.Detail
	}
	return nil
}

func reserved(t *testing.T, s *workitem.Service, c *workitem.ClaimResult, host string) workitem.Reservation {
	t.Helper()
	r, err := s.Reserve(as(member), reserveOf(c, host))
	noErr(t, "reserve "+c.WorkItem.WorkItemID, err)
	return r.Reservation
}

// Every refusal reason of reserve, each with nothing changed.
func TestReserveRefusals(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	reserveErr := func(c *workitem.ClaimResult, host string) func() error {
		return func() error { _, err := s.Reserve(as(member), reserveOf(c, host)); return err }
	}
	n := 0
	item := func(mod func(*extension.Extension)) *workitem.ClaimResult {
		n++
		e := baseExt()
		mod(&e)
		return claimed(t, s, "r"+string(rune('a'+n)), e, time.Hour)
	}
	none := func(*extension.Extension) {}

	// capacity: above the profile's max, and a named host that is full.
	big := item(func(e *extension.Extension) { e.Dimensions.CPUMillis = 64_001 })
	refusedFSM(t, l, "above the profile's max", errs.CodeConflict, workitem.RefuseCapacity, reserveErr(big, ""))
	most := item(func(e *extension.Extension) { e.Dimensions.CPUMillis = 7500 })
	reserved(t, s, most, "h1")
	refusedFSM(t, l, "a full host", errs.CodeConflict, workitem.RefuseCapacity, reserveErr(item(none), "h1"))

	// no_eligible_host: labels nobody has, a host nobody registered.
	refusedFSM(t, l, "labels", errs.CodeConflict, workitem.RefuseNoEligibleHost,
		reserveErr(item(func(e *extension.Extension) { e.HostLabels = map[string]string{"zone": "c"} }), ""))
	refusedFSM(t, l, "unknown host", errs.CodeConflict, workitem.RefuseNoEligibleHost, reserveErr(item(none), "h9"))

	// anti_affinity on h2.
	reserved(t, s, item(func(e *extension.Extension) { e.AntiAffinity = []string{"gpu"} }), "h2")
	refusedFSM(t, l, "anti-affinity", errs.CodeConflict, workitem.RefuseAntiAffinity,
		reserveErr(item(func(e *extension.Extension) { e.AntiAffinity = []string{"x", "gpu"} }), "h2"))

	// disk_watermark: the item's own watermark above what h2 keeps.
	refusedFSM(t, l, "disk watermark", errs.CodeConflict, workitem.RefuseDiskWatermark,
		reserveErr(item(func(e *extension.Extension) { e.Disk.MinFreeMiB = 102400 }), "h2"))

	// repository_exclusive, both ways: exclusive beside shared, and
	// anything beside exclusive.
	refusedFSM(t, l, "exclusive repository in shared use", errs.CodeConflict, workitem.RefuseRepositoryExclusive,
		reserveErr(item(func(e *extension.Extension) { e.Exclusivity.Repository = true }), "h2"))
	reserved(t, s, item(func(e *extension.Extension) { e.Repository, e.Exclusivity.Repository = "repo-x", true }), "h2")
	refusedFSM(t, l, "shared use of an exclusive repository", errs.CodeConflict, workitem.RefuseRepositoryExclusive,
		reserveErr(item(func(e *extension.Extension) { e.Repository = "repo-x" }), "h2"))

	// branch_exclusive: the base_ref "main" is the shared branch of repo-a.
	refusedFSM(t, l, "exclusive branch in shared use", errs.CodeConflict, workitem.RefuseBranchExclusive,
		reserveErr(item(func(e *extension.Extension) { e.Branch, e.Exclusivity.Branch = "main", true }), "h2"))

	// concurrency_limit: builds-2 at its limit of 1.
	reserved(t, s, item(func(e *extension.Extension) {
		e.Concurrency = extension.Concurrency{Key: "builds-2", Limit: 1}
		e.BaseRef = "dev"
	}), "h2")
	refusedFSM(t, l, "concurrency", errs.CodeConflict, workitem.RefuseConcurrencyLimit,
		reserveErr(item(func(e *extension.Extension) { e.Concurrency = extension.Concurrency{Key: "builds-2", Limit: 1} }), "h2"))

	// fairness: group g owes a few units of 1000; 1000 more pass max_debt.
	refusedFSM(t, l, "fairness", errs.CodeConflict, workitem.RefuseFairness,
		reserveErr(item(func(e *extension.Extension) { e.Fairness.Cost = 1000 }), "h2"))

	// telemetry_stale: a minute later nothing has reported.
	stale := item(none)
	l.Advance(61 * time.Second)
	refusedFSM(t, l, "stale telemetry", errs.CodeConflict, workitem.RefuseTelemetryStale, reserveErr(stale, "h2"))
	_, err := s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h2", ReportSeq: 10, DiskFreeMiB: 102400})
	noErr(t, "telemetry", err)

	// profile_disabled: not loaded, dark, shadow; profile_incomplete.
	refusedFSM(t, l, "unloaded profile", errs.CodeConflict, workitem.RefuseProfileDisabled,
		reserveErr(item(func(e *extension.Extension) { e.Profile.Version = "v9" }), "h2"))
	for _, mode := range []string{workitem.ModeDark, workitem.ModeShadow} {
		p := completeProfile("p2", "v1")
		p.Mode = mode
		inc := completeProfile("p3", "v1")
		inc.Fairness.DecayPerS = 0
		_, err := s.SetProfiles(as(ops), workitem.ProfilesRequest{Profiles: []workitem.Profile{completeProfile("p", "v1"), p, inc}})
		noErr(t, "profiles", err)
		refusedFSM(t, l, mode+" profile", errs.CodeConflict, workitem.RefuseProfileDisabled,
			reserveErr(item(func(e *extension.Extension) { e.Profile.Name = "p2" }), "h2"))
		e := refusedFSM(t, l, "incomplete profile", errs.CodeConflict, workitem.RefuseProfileIncomplete,
			reserveErr(item(func(e *extension.Extension) { e.Profile.Name = "p3" }), "h2"))
		if m := fmt.Sprint(e.Detail["missing"]); m != "[fairness.decay_per_s]" {
			t.Fatalf("incomplete profile: missing %v", e.Detail["missing"])
		}
	}

	// not_reservable: an item without the extension.
	r := req("legacy")
	r.WorkItemID = "legacy"
	mustSubmit(t, s, r)
	leg, err := s.Claim(as(member), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: "legacy", TTLMs: 3_600_000})
	noErr(t, "claim legacy", err)
	refusedFSM(t, l, "no extension", errs.CodeConflict, workitem.RefuseNotReservable, reserveErr(leg, "h2"))

	// The claim itself: another attempt or fence, another member, a
	// missing item, an expired claim.
	c := item(none)
	for what, bad := range map[string]workitem.ReserveRequest{
		"an older fence":  {TenantRef: "t", WorkItemID: c.WorkItem.WorkItemID, Attempt: 1, Fence: c.Fence - 1},
		"another attempt": {TenantRef: "t", WorkItemID: c.WorkItem.WorkItemID, Attempt: 2, Fence: c.Fence},
	} {
		refusedFSM(t, l, what, errs.CodeStaleFence, "", func() error { _, err := s.Reserve(as(member), bad); return err })
	}
	refusedFSM(t, l, "another member", errs.CodeForbidden, "", func() error { _, err := s.Reserve(as(member2), reserveOf(c, "")); return err })
	refusedFSM(t, l, "another tenant", errs.CodeForbidden, "", func() error { _, err := s.Reserve(as(outsider), reserveOf(c, "")); return err })
	refusedFSM(t, l, "a missing item", errs.CodeNotFound, "", func() error {
		_, err := s.Reserve(as(member), workitem.ReserveRequest{TenantRef: "t", WorkItemID: "ghost", Attempt: 1, Fence: 1})
		return err
	})
	short := claimed(t, s, "short", baseExt(), time.Second)
	l.Advance(time.Second)
	refusedFSM(t, l, "an expired claim", errs.CodeExpired, "", reserveErr(short, "h2"))
	checkRes(t, l.FSM)
}

// An item admitted while the cluster checked no extension (version 1 of
// submit) keeps whatever it was given; reserve re-reads it: a tampered
// fingerprint is fingerprint_mismatch, an unreadable record
// not_reservable. An admin then rewrites the unreadable one, with the
// item's exact fence, and it reserves.
func TestReserveRereadsTheExtension(t *testing.T) {
	l, s := newService(t) // ungated: submit version 1
	_, raw, err := extension.Seal(baseExt())
	noErr(t, "seal", err)
	tampered := tamper(raw)
	submit := func(id, meta string) {
		if err := rawSubmitMeta(l, id, meta); err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
	}
	submit("tampered", `{"resource_reservation":`+string(tampered)+`}`)
	submit("broken", `{"resource_reservation":{"schema_version":"1","extra":true}}`)
	enable(t, l)
	setup(t, s)
	claim := func(id string) *workitem.ClaimResult {
		c, err := s.Claim(as(member), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: id, TTLMs: 3_600_000})
		noErr(t, "claim", err)
		return c
	}
	tc, bc := claim("tampered"), claim("broken")
	refusedFSM(t, l, "tampered", errs.CodeConflict, workitem.RefuseFingerprintMismatch,
		func() error { _, err := s.Reserve(as(member), reserveOf(tc, "")); return err })
	refusedFSM(t, l, "broken", errs.CodeConflict, workitem.RefuseNotReservable,
		func() error { _, err := s.Reserve(as(member), reserveOf(bc, "")); return err })

	rewrite := workitem.RewriteExtensionRequest{TenantRef: "t", WorkItemID: "broken", Fence: bc.Fence - 1, Extension: raw}
	refusedFSM(t, l, "rewrite with another fence", errs.CodeStaleFence, "", func() error { _, err := s.RewriteExtension(as(ops), rewrite); return err })
	rewrite.Fence = bc.Fence
	refusedFSM(t, l, "rewrite by a member", errs.CodeForbidden, "", func() error { _, err := s.RewriteExtension(as(member), rewrite); return err })
	bad := rewrite
	bad.Extension = tampered
	refusedFSM(t, l, "rewrite with a tampered record", errs.CodeInvalid, extension.ReasonFingerprintMismatch,
		func() error { _, err := s.RewriteExtension(as(ops), bad); return err })
	res, err := s.RewriteExtension(as(ops), rewrite)
	noErr(t, "rewrite", err)
	if string(res.WorkItem.Metadata) == "" || res.WorkItem.Status != workitem.StatusClaimed {
		t.Fatalf("rewritten item %+v", res.WorkItem)
	}
	refusedFSM(t, l, "rewrite of a readable record", errs.CodeConflict, "", func() error { _, err := s.RewriteExtension(as(ops), rewrite); return err })
	reserved(t, s, bc, "")
	checkRes(t, l.FSM)
}

// Submit version 2 refuses a bad extension (422, the record's field and
// reason), changing nothing.
func TestSubmitChecksTheExtension(t *testing.T) {
	l, s := newEnabled(t)
	_, raw, err := extension.Seal(baseExt())
	noErr(t, "seal", err)
	for what, c := range map[string]struct {
		meta, field, reason string
	}{
		"unknown field":   {`{"resource_reservation":` + string(raw[:len(raw)-1]) + `,"zz":1}}`, "metadata.resource_reservation.zz", extension.ReasonInvalid},
		"future version":  {`{"resource_reservation":{"schema_version":"2"}}`, "metadata.resource_reservation.schema_version", extension.ReasonInvalid},
		"bad fingerprint": {`{"resource_reservation":` + string(tamper(raw)) + `}`, "metadata.resource_reservation.fingerprint", extension.ReasonFingerprintMismatch},
	} {
		r := req("bad-" + what)
		r.Metadata = []byte(c.meta)
		// The service refuses it before proposing; the FSM (version 2)
		// refuses a command that skipped the service.
		for _, via := range []func() error{
			func() error { _, err := s.Submit(bg, r); return err },
			func() error { return rawSubmitMeta(l, "raw-"+what, c.meta) },
		} {
			e := refusedFSM(t, l, what, errs.CodeInvalid, c.reason, via)
			if e.Detail["field"] != c.field {
				t.Errorf("%s: field %v, want %s", what, e.Detail["field"], c.field)
			}
		}
	}
	b := workitem.BatchRequest{TenantRef: "t", IdempotencyKey: "batch", Requests: []workitem.SubmitRequest{req(""), req("")}}
	b.Requests[0].IdempotencyKey, b.Requests[1].IdempotencyKey = "", ""
	b.Requests[1].Metadata = []byte(`{"resource_reservation":{"schema_version":"1"}}`)
	e := refusedFSM(t, l, "batch", errs.CodeInvalid, extension.ReasonInvalid, func() error { _, err := s.SubmitBatch(bg, b); return err })
	if e.Detail["request_index"] != float64(1) && e.Detail["request_index"] != 1 && e.Detail["request_index"] != int64(1) && e.Detail["request_index"] != uint64(1) {
		t.Errorf("batch: detail %v", e.Detail)
	}
}

// A reserve without a host takes the eligible host with the most free
// weighted capacity, ties by host_id; asking again answers the same
// reservation; release frees it, fenced, and a repeated release answers
// it unchanged.
func TestReservePlacementAndRelease(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	a := claimed(t, s, "a", baseExt(), time.Hour)
	ra := reserved(t, s, a, "")
	if ra.HostID != "h1" {
		t.Fatalf("tie: reserved on %s, want h1", ra.HostID)
	}
	b := claimed(t, s, "b", baseExt(), time.Hour)
	if rb := reserved(t, s, b, ""); rb.HostID != "h2" {
		t.Fatalf("reserved on %s, want h2 (more free)", rb.HostID)
	}
	before := contentHash(t, l.FSM)
	again, err := s.Reserve(as(member), reserveOf(a, ""))
	if err != nil || !cmp.Equal(again.Reservation, ra) || contentHash(t, l.FSM) != before {
		t.Fatalf("reserve again: %+v %v", again, err)
	}
	refusedFSM(t, l, "reserve again elsewhere", errs.CodeConflict, "", func() error { _, err := s.Reserve(as(member), reserveOf(a, "h2")); return err })
	rel := workitem.ReleaseRequest{TenantRef: "t", WorkItemID: "a", Attempt: a.Attempt, Fence: a.Fence, ReservationID: ra.ReservationID}
	stale := rel
	stale.Fence--
	refusedFSM(t, l, "stale release", errs.CodeStaleFence, "", func() error { _, err := s.Release(as(member), stale); return err })
	wrong := rel
	wrong.WorkItemID = "b"
	refusedFSM(t, l, "release of another item's reservation", errs.CodeNotFound, "", func() error { _, err := s.Release(as(member), wrong); return err })
	out, err := s.Release(as(member), rel)
	if err != nil || out.Reservation.Status != workitem.ReservationReleased || out.Reservation.EndReason != workitem.EndReleased {
		t.Fatalf("release: %+v %v", out, err)
	}
	before = contentHash(t, l.FSM)
	if again, err := s.Release(as(member), rel); err != nil || !cmp.Equal(again.Reservation, out.Reservation) || contentHash(t, l.FSM) != before {
		t.Fatalf("release again: %+v %v", again, err)
	}
	st := checkRes(t, l.FSM)
	if st.Hosts[0].Used != (workitem.Dimensions{}) {
		t.Fatalf("h1 after the release: %+v", st.Hosts[0])
	}
}

// No reservation outlives its claim: complete and cancel end it in the
// same command, and so does the Tick that requeues an expired claim; a
// claim that expired before Tick ran is reclaimed by reclaim.
func TestClaimEndEndsTheReservation(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	a := claimed(t, s, "a", baseExt(), time.Hour)
	reserved(t, s, a, "h1")
	_, err := s.Complete(as(member), workitem.CompleteRequest{TenantRef: "t", WorkItemID: "a", Attempt: a.Attempt, Fence: a.Fence, Outcome: workitem.StatusSucceeded})
	noErr(t, "complete", err)
	b := claimed(t, s, "b", baseExt(), time.Hour)
	reserved(t, s, b, "h1")
	_, err = s.Cancel(as(member), workitem.CancelRequest{TenantRef: "t", WorkItemID: "b", Reason: "r"})
	noErr(t, "cancel", err)
	c := claimed(t, s, "c", baseExt(), 2*time.Second)
	reserved(t, s, c, "h1")
	d := claimed(t, s, "d", baseExt(), 2*time.Second)
	rd := reserved(t, s, d, "h2")
	l.Advance(2 * time.Second)
	// Before any Tick: reclaim ends d's (a member of t may), c's waits.
	refusedFSM(t, l, "reclaim of every tenant by a member", errs.CodeForbidden, "", func() error {
		_, err := s.Reclaim(as(member), workitem.ReclaimRequest{MaxCount: 10})
		return err
	})
	rc, err := s.Reclaim(as(member), workitem.ReclaimRequest{TenantRef: "t", HostID: "h2", MaxCount: 10})
	if err != nil || len(rc.ReclaimedIDs) != 1 || rc.ReclaimedIDs[0] != rd.ReservationID {
		t.Fatalf("reclaim: %+v %v", rc, err)
	}
	checkRes(t, l.FSM)
	tick(t, l, 10)
	st := checkRes(t, l.FSM)
	for _, r := range st.Reservations {
		if r.Status == workitem.ReservationActive {
			t.Fatalf("reservation %s outlived its claim", r.ReservationID)
		}
		want := map[string]string{"a": workitem.EndClaimEnded, "b": workitem.EndClaimEnded, "c": workitem.EndClaimExpired, "d": workitem.EndReclaimed}[r.WorkItemID]
		if r.EndReason != want {
			t.Errorf("%s ended %s, want %s", r.WorkItemID, r.EndReason, want)
		}
	}
	for _, h := range st.Hosts {
		if h.Used != (workitem.Dimensions{}) {
			t.Errorf("host %s still uses %+v", h.HostID, h.Used)
		}
	}
	// The requeued item is claimed again (attempt 2) and reserves anew;
	// the stale holder of attempt 1 neither reserves nor releases.
	c2, err := s.Claim(as(member), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w2", WorkItemID: "c", TTLMs: 60_000})
	noErr(t, "reclaim c", err)
	refusedFSM(t, l, "the stale holder reserves", errs.CodeStaleFence, "", func() error { _, err := s.Reserve(as(member), reserveOf(c, "")); return err })
	r2 := reserved(t, s, c2, "")
	refusedFSM(t, l, "the stale holder releases", errs.CodeStaleFence, "", func() error {
		_, err := s.Release(as(member), workitem.ReleaseRequest{TenantRef: "t", WorkItemID: "c", Attempt: c.Attempt, Fence: c.Fence, ReservationID: r2.ReservationID})
		return err
	})
	// Retention forgets ended reservations an hour after they ended (r2
	// ended with its claim at this very tick).
	l.Advance(workitem.ReservationRetention + time.Second)
	tick(t, l, 100)
	if st := checkRes(t, l.FSM); len(st.Reservations) != 1 || st.Reservations[0].ReservationID != r2.ReservationID || st.Reservations[0].EndReason != workitem.EndClaimExpired {
		t.Fatalf("after retention: %+v", st.Reservations)
	}
}

// Fairness debt decays by decay_per_s of FSM time, exactly, whether or
// not Tick brought it up to date, never below zero; a refused reserve
// goes through once enough has decayed.
func TestFairnessDecays(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	e := baseExt()
	e.Fairness.Cost = 600
	a := claimed(t, s, "a", e, time.Hour)
	if r := reserved(t, s, a, ""); r.FairnessDebtAfter != 600 {
		t.Fatalf("debt after %d", r.FairnessDebtAfter)
	}
	e.BaseRef = "other"
	b := claimed(t, s, "b", e, time.Hour)
	refusedFSM(t, l, "1200 > 1000", errs.CodeConflict, workitem.RefuseFairness, func() error { _, err := s.Reserve(as(member), reserveOf(b, "")); return err })
	debt := func() workitem.Debt {
		q, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t"}, 0)
		noErr(t, "query", err)
		if len(q.Fairness) != 1 {
			t.Fatalf("fairness rows %+v", q.Fairness)
		}
		return q.Fairness[0]
	}
	l.Advance(150_500 * time.Millisecond)
	tick(t, l, 10) // brings the row up to date
	if d := debt(); d.DebtMilli != 600_000-150_500 || d.Debt != 450 {
		t.Fatalf("after 150.5 s: %+v", d)
	}
	l.Advance(49_500 * time.Millisecond) // no tick: the read decays it
	_, err := s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h1", ReportSeq: 7, DiskFreeMiB: 102400})
	noErr(t, "telemetry", err)
	if d := debt(); d.DebtMilli != 400_000 || d.Debt != 400 {
		t.Fatalf("after 200 s: %+v", d)
	}
	if r := reserved(t, s, b, ""); r.FairnessDebtAfter != 1000 {
		t.Fatalf("debt after the second reserve %d", r.FairnessDebtAfter)
	}
	l.Advance(2000 * time.Second)
	tick(t, l, 10)
	q, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t"}, 0)
	if err != nil || len(q.Fairness) != 0 {
		t.Fatalf("a paid debt stays: %+v %v", q, err)
	}
	checkRes(t, l.FSM)
}

// Telemetry is a strictly increasing series; disk reserved after a
// report counts against the watermark until the next one.
func TestTelemetryAndDiskSinceReport(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	refusedFSM(t, l, "a stale report", errs.CodeConflict, "stale_report", func() error {
		_, err := s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h1", ReportSeq: 1, DiskFreeMiB: 5})
		return err
	})
	refusedFSM(t, l, "an unknown host", errs.CodeNotFound, "", func() error {
		_, err := s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h9", ReportSeq: 1, DiskFreeMiB: 5})
		return err
	})
	refusedFSM(t, l, "a tenant's controller", errs.CodeForbidden, "", func() error {
		_, err := s.ReportTelemetry(as(ctl), workitem.TelemetryRequest{HostID: "h1", ReportSeq: 9, DiskFreeMiB: 5})
		return err
	})
	_, err := s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h1", ReportSeq: 5, DiskFreeMiB: 2200})
	noErr(t, "report", err)
	e := baseExt()
	e.HostLabels, e.Disk.MinFreeMiB = map[string]string{"zone": "a"}, 200
	reserved(t, s, claimed(t, s, "a", e, time.Hour), "") // 2200 - 1024 = 1176 left; 152 after another
	e.BaseRef = "b2"
	b := claimed(t, s, "b", e, time.Hour)
	refusedFSM(t, l, "the disk reserved since the report", errs.CodeConflict, workitem.RefuseDiskWatermark,
		func() error { _, err := s.Reserve(as(member), reserveOf(b, "h1")); return err })
	_, err = s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h1", ReportSeq: 6, DiskFreeMiB: 2200})
	noErr(t, "report", err)
	reserved(t, s, b, "")
}

// Hosts: controllers of every tenant register them; the epoch is a
// compare-and-set guard; capacity never drops below use; at most
// MaxHosts.
func TestPutHost(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	reserved(t, s, claimed(t, s, "a", baseExt(), time.Hour), "h1")
	zero := uint64(0)
	h1 := workitem.PutHostRequest{HostID: "h1", Capacity: workitem.Dimensions{CPUMillis: 500, MemoryMiB: 16384, DiskMiB: 102400, Processes: 8}}
	refusedFSM(t, l, "below use", errs.CodeConflict, "", func() error { _, err := s.PutHost(as(fleet), h1); return err })
	h1.Capacity.CPUMillis, h1.ExpectedEpoch = 1000, &zero
	refusedFSM(t, l, "stale epoch", errs.CodeStaleEpoch, "", func() error { _, err := s.PutHost(as(fleet), h1); return err })
	refusedFSM(t, l, "a tenant's controller", errs.CodeForbidden, "", func() error { _, err := s.PutHost(as(ctl), h1); return err })
	for what, bad := range map[string]workitem.PutHostRequest{
		"a path as id":  {HostID: "/etc/host"},
		"a token label": {HostID: "hx", Labels: map[string]string{"repo": "https://tok@github.com/x"}},
		"negative":      {HostID: "hx", Capacity: workitem.Dimensions{CPUMillis: -1}},
	} {
		refusedFSM(t, l, what, errs.CodeInvalid, "", func() error { _, err := s.PutHost(as(fleet), bad); return err })
	}
	st := readRes(t, l.FSM)
	epoch := st.Hosts[0].Epoch
	h1.ExpectedEpoch = &epoch
	res, err := s.PutHost(as(fleet), h1)
	if err != nil || res.Created || res.Host.Epoch <= epoch || res.Host.Used.CPUMillis != 1000 {
		t.Fatalf("put with the epoch: %+v %v", res, err)
	}
	for i := 2; i < workitem.MaxHosts; i++ {
		_, err := s.PutHost(bg, workitem.PutHostRequest{HostID: "x" + string(rune('A'+i/26)) + string(rune('a'+i%26))})
		noErr(t, "host", err)
	}
	refusedFSM(t, l, "one host too many", errs.CodeExhausted, "", func() error { _, err := s.PutHost(bg, workitem.PutHostRequest{HostID: "last"}); return err })
	checkRes(t, l.FSM)
}

// Profiles: admins replace the set; the same set again changes nothing;
// a bad one is refused whole.
func TestSetProfiles(t *testing.T) {
	l, s := newEnabled(t)
	set := workitem.ProfilesRequest{Profiles: []workitem.Profile{completeProfile("p", "v1"), {Name: "empty", Version: "0"}}}
	res, err := s.SetProfiles(as(ops), set)
	if err != nil || !res.Changed || len(res.Profiles) != 2 || res.Profiles[0].Complete || !res.Profiles[1].Complete || len(res.Profiles[0].Missing) != 13 {
		t.Fatalf("set: %+v %v", res, err)
	}
	before := contentHash(t, l.FSM)
	again, err := s.SetProfiles(as(ops), set)
	if err != nil || again.Changed || again.Digest != res.Digest || contentHash(t, l.FSM) != before {
		t.Fatalf("the same set again: %+v %v", again, err)
	}
	refusedFSM(t, l, "by a controller", errs.CodeForbidden, "", func() error { _, err := s.SetProfiles(as(fleet), set); return err })
	bad := workitem.ProfilesRequest{Profiles: []workitem.Profile{completeProfile("p", "v1"), completeProfile("p", "v1")}}
	refusedFSM(t, l, "twice the same", errs.CodeInvalid, "", func() error { _, err := s.SetProfiles(as(ops), bad); return err })
	bad.Profiles[1].Version, bad.Profiles[1].Mode = "v2", "on"
	refusedFSM(t, l, "an unknown mode", errs.CodeInvalid, "", func() error { _, err := s.SetProfiles(as(ops), bad); return err })
	got, err := s.Profiles(as(reader), 0)
	if err != nil || got.Digest != res.Digest {
		t.Fatalf("read: %+v %v", got, err)
	}
}

// The query pages reservations, hosts and debts with one cursor bound
// to its request; another tenant's reader gets not_found.
func TestQueryPages(t *testing.T) {
	_, s := newEnabled(t)
	setup(t, s)
	for _, id := range []string{"a", "b", "c"} {
		e := baseExt()
		e.BaseRef = "br-" + id
		reserved(t, s, claimed(t, s, id, e, time.Hour), "")
	}
	var rows []string
	cursor := ""
	for pages := 0; ; pages++ {
		q, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: 2, Cursor: cursor}, 0)
		noErr(t, "query", err)
		if n := len(q.Reservations) + len(q.Hosts) + len(q.Fairness); n > 2 || n == 0 || pages > 5 {
			t.Fatalf("page %d: %d rows", pages, n)
		}
		for _, r := range q.Reservations {
			rows = append(rows, "r:"+r.WorkItemID)
		}
		for _, h := range q.Hosts {
			rows = append(rows, "h:"+h.HostID)
		}
		for _, d := range q.Fairness {
			rows = append(rows, "f:"+d.Group)
		}
		if cursor = q.NextCursor; cursor == "" {
			break
		}
	}
	if got := join(rows); got != "r:a r:b r:c h:h1 h:h2 f:g" {
		t.Fatalf("paged rows %s", got)
	}
	first, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: 1}, 0)
	noErr(t, "query", err)
	if _, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", WorkItemID: "a", MaxCount: 1, Cursor: first.NextCursor}, 0); !errors.Is(err, errs.Invalid) {
		t.Fatalf("a cursor of another query: %v", err)
	}
	if _, err := s.Query(as(outsider), workitem.QueryRequest{TenantRef: "t"}, 0); !errors.Is(err, errs.NotFound) {
		t.Fatalf("another tenant: %v", err)
	}
	one, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", WorkItemID: "b", HostID: "h2"}, 0)
	if err != nil || len(one.Hosts) != 1 || len(one.Reservations) > 1 {
		t.Fatalf("one item on one host: %+v %v", one, err)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// tamper changes one hex digit of a record's fingerprint.
func tamper(raw []byte) []byte {
	out := append([]byte(nil), raw...)
	i := strings.Index(string(out), `"v1:`) + 5
	if out[i] == '0' {
		out[i] = '1'
	} else {
		out[i] = '0'
	}
	return out
}

// rawSubmitMeta proposes a submit of item id whose metadata is meta (in
// canonical form), past the service's checks.
func rawSubmitMeta(l fsm.Proposer, id, meta string) error {
	c, err := canon.JSON([]byte(meta))
	if err != nil {
		return err
	}
	r := validRaw()
	r.Item.WorkItemID, r.Item.Metadata, r.Item.MaxAttempts = id, c, 2
	res, err := l.Propose(bg, log.Command{Type: workitem.CmdSubmit, Version: 1, IdemScope: scopeOf("t", "default"), IdemKey: "raw-" + id,
		Payload: log.MustMarshal(r)})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}

// A reservation whose every identifier is at its bound still writes its
// outbox event (at most fsm.MaxEventPayload bytes).
func TestLargestReservationEvent(t *testing.T) {
	_, s := newEnabled(t)
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	host := long("h", extension.MaxIdentifierBytes)
	prof := completeProfile(long("p", extension.MaxIdentifierBytes), long("v", extension.MaxIdentifierBytes))
	_, err := s.SetProfiles(as(ops), workitem.ProfilesRequest{Profiles: []workitem.Profile{prof}})
	noErr(t, "profiles", err)
	_, err = s.PutHost(as(fleet), workitem.PutHostRequest{HostID: host, Capacity: workitem.Dimensions{CPUMillis: 1 << 20, MemoryMiB: 1 << 20, DiskMiB: 1 << 20, Processes: 1 << 20}})
	noErr(t, "host", err)
	_, err = s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: host, ReportSeq: 1, DiskFreeMiB: 1 << 30})
	noErr(t, "telemetry", err)
	e := baseExt()
	e.Profile = extension.ProfileRef{Name: prof.Name, Version: prof.Version}
	e.Repository, e.Branch, e.BaseRef = long("r", 128), long("b", 128), long("f", 128)
	e.Concurrency.Key, e.Fairness.Group = long("c", 128), long("g", 128)
	for i := range extension.MaxAntiAffinity {
		e.AntiAffinity = append(e.AntiAffinity, fmt.Sprintf("%02d%s", i, long("a", 126)))
	}
	id := long("i", 510) // its key, "k-" + id, is at the bound of 512
	c := claimed(t, s, id, e, time.Hour)
	r := reserved(t, s, c, host)
	if len(r.Keys.AntiAffinity) != extension.MaxAntiAffinity {
		t.Fatalf("keys %+v", r.Keys)
	}
}
