package workitem_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

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
		q, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: workitem.MaxQueryPage}, 0)
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
	q, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: workitem.MaxQueryPage}, 0)
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
	if _, err := s.Query(as(outsider), workitem.QueryRequest{TenantRef: "t", MaxCount: workitem.MaxQueryPage}, 0); !errors.Is(err, errs.NotFound) {
		t.Fatalf("another tenant: %v", err)
	}
	one, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", WorkItemID: "b", HostID: "h2", MaxCount: workitem.MaxQueryPage}, 0)
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

// Reclaim looks at no more than 8 x max_count due reservations a call;
// its cursor, bound to the tenant and host it was issued for, goes on
// after them.
func TestReclaimPages(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	_, err := s.PutHost(as(fleet), workitem.PutHostRequest{HostID: "h3", Capacity: workitem.Dimensions{CPUMillis: 8000, MemoryMiB: 16384, DiskMiB: 102400, Processes: 8}})
	noErr(t, "h3", err)
	_, err = s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h3", ReportSeq: 1, DiskFreeMiB: 102400})
	noErr(t, "report", err)
	for i := range 9 {
		reserved(t, s, claimed(t, s, fmt.Sprintf("x%d", i), baseExt(), time.Second), []string{"h1", "h2"}[i%2])
	}
	target := reserved(t, s, claimed(t, s, "target", baseExt(), time.Second), "h3")
	l.Advance(time.Second)
	first, err := s.Reclaim(as(member), workitem.ReclaimRequest{TenantRef: "t", HostID: "h3", MaxCount: 1})
	if err != nil || len(first.ReclaimedIDs) != 0 || first.NextCursor == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	refusedFSM(t, l, "the cursor for another host", errs.CodeInvalid, "", func() error {
		_, err := s.Reclaim(as(member), workitem.ReclaimRequest{TenantRef: "t", HostID: "h1", MaxCount: 1, Cursor: first.NextCursor})
		return err
	})
	next, err := s.Reclaim(as(member), workitem.ReclaimRequest{TenantRef: "t", HostID: "h3", MaxCount: 1, Cursor: first.NextCursor})
	if err != nil || len(next.ReclaimedIDs) != 1 || next.ReclaimedIDs[0] != target.ReservationID || next.NextCursor != "" {
		t.Fatalf("second page: %+v %v", next, err)
	}
	all, err := s.Reclaim(bg, workitem.ReclaimRequest{MaxCount: workitem.MaxReclaim})
	if err != nil || len(all.ReclaimedIDs) != 9 {
		t.Fatalf("every tenant: %+v %v", all, err)
	}
	checkRes(t, l.FSM)
}
