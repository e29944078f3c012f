package workitem_test

import (
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
func rawSubmitMeta(l interface {
	fsm.Proposer
	fsm.Reader
}, id, meta string) error {
	c, err := canon.JSON([]byte(meta))
	if err != nil {
		return err
	}
	r := validRaw()
	r.Item.WorkItemID, r.Item.Metadata, r.Item.MaxAttempts = id, c, 2
	res, err := l.Propose(bg, log.Command{Type: workitem.CmdSubmit, Version: 1, IdemScope: scopeOf(l, "t", "default"), IdemKey: "raw-" + id,
		Payload: log.MustMarshal(r)})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}

// A holder whose claim has expired hears expired when it asks again for
// the reservation it held, though no tick has ended that reservation yet
// (it is still active, and the tick ends it later). Before version 3 of
// reserve it heard the reservation, as if it still held it: the chaos
// test's reservation workload caught a stale holder told so. A cluster
// whose voters have not all reached version 3 keeps that answer, so that
// every replica answers alike.
func TestReserveAgainAfterTheClaimExpired(t *testing.T) {
	for _, v := range []uint16{2, 3} {
		t.Run(fmt.Sprintf("reserve v%d", v), func(t *testing.T) {
			l, s := newService(t)
			enableCapped(t, l, v, workitem.CmdReserve)
			setup(t, s)
			c := claimed(t, s, "a", baseExt(), time.Second)
			held := reserved(t, s, c, "")
			again := func() error { _, err := s.Reserve(as(member), reserveOf(c, "")); return err }
			l.Advance(time.Second) // the claim's expiry: no tick has run
			if st := checkRes(t, l.FSM); len(st.Reservations) != 1 || st.Reservations[0].Status != workitem.ReservationActive {
				t.Fatalf("before any tick: %+v, want the reservation still active", st.Reservations)
			}
			if v >= 3 {
				refusedFSM(t, l, "reserve again after the claim expired", errs.CodeExpired, "", again)
				return
			}
			out, err := s.Reserve(as(member), reserveOf(c, ""))
			if err != nil || !cmp.Equal(out.Reservation, held) {
				t.Fatalf("reserve v2 again after expiry: %+v %v, want the reservation held", out, err)
			}
		})
	}
}
