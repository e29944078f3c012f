package workitem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// atVersion is an FSM whose enabled set has every workitem command at
// version v (or its newest, if older): a cluster with a member whose
// binary serves only v.
func atVersion(t *testing.T, v uint16) (*fsmtest.Local, *workitem.Service) {
	t.Helper()
	l, s := newService(t)
	set := fsm.ServedBy(workitem.Module())
	for i := range set.Domains {
		if set.Domains[i].Name != workitem.Name {
			continue
		}
		for j := range set.Domains[i].Commands {
			set.Domains[i].Commands[j].Version = min(set.Domains[i].Commands[j].Version, v)
		}
	}
	if err := l.Enable(set); err != nil {
		t.Fatal(err)
	}
	return l, s
}

// proposeRaw proposes r as a submit that skipped the service, in the
// scope the cluster takes.
func proposeRaw(t *testing.T, l *fsmtest.Local, key string, r rawSubmit) *errs.Error {
	t.Helper()
	res, err := l.Propose(as(member), log.Command{Type: workitem.CmdSubmit, Version: 1, IdemScope: scopeOf(l, r.TenantRef, r.GraphRef),
		IdemKey: key, Payload: log.MustMarshal(r)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Err
}

// Issue 40 item 11: all four digests are "sha256:" and 64 lowercase hex
// digits, in the service and, from submit version 3 on, in Apply; a log
// from version 2 replays as it was applied (any identifier).
func TestEveryDigestIsChecked(t *testing.T) {
	for _, field := range []string{"policy_digest", "catalog_digest", "model_digest"} {
		r := req("d-" + field)
		bad := rawOf(r)
		switch field {
		case "policy_digest":
			r.PolicyDigest, bad.Item.PolicyDigest = "hello", "hello"
		case "catalog_digest":
			r.CatalogDigest, bad.Item.CatalogDigest = "sha256:ABC", "sha256:ABC"
		case "model_digest":
			r.ModelDigest, bad.Item.ModelDigest = "model-1", "model-1"
		}
		l, s := atVersion(t, 3)
		e := refusedFSM(t, l, field+" via the service", errs.CodeInvalid, "", func() error { _, err := s.Submit(as(member), r); return err })
		if e.Detail["field"] != field {
			t.Errorf("%s: field %v", field, e.Detail["field"])
		}
		e = refusedFSM(t, l, field+" in Apply", errs.CodeInvalid, "", func() error {
			if e := proposeRaw(t, l, "raw", bad); e != nil {
				return e
			}
			return nil
		})
		if e.Detail["field"] != field {
			t.Errorf("%s in Apply: field %v", field, e.Detail["field"])
		}
		old, _ := atVersion(t, 2)
		if e := proposeRaw(t, old, "raw", bad); e != nil {
			t.Errorf("%s at version 2: %v, want it admitted as it was", field, e)
		}
	}
}

// rawOf is r as the command carries it.
func rawOf(r workitem.SubmitRequest) rawSubmit {
	raw := validRaw()
	raw.Item.PolicyDigest, raw.Item.CatalogDigest, raw.Item.ModelDigest = r.PolicyDigest, r.CatalogDigest, r.ModelDigest
	return raw
}

// leakyRecord is a record whose repository is value, fingerprinted as
// a client that skipped Seal's checks would.
func leakyRecord(t *testing.T, value string) string {
	t.Helper()
	_, raw, err := extension.Seal(baseExt())
	noErr(t, "seal", err)
	var m map[string]any
	noErr(t, "decode", json.Unmarshal(raw, &m))
	m["repository"] = value
	delete(m, "fingerprint")
	b, _ := json.Marshal(m)
	fp, err := extension.Fingerprint(b)
	noErr(t, "fingerprint", err)
	m["fingerprint"] = fp
	b, _ = json.Marshal(m)
	return string(b)
}

// Issue 40 item 10: a record carrying a path, URL, shell syntax or a
// token is refused at submit (422, detail.field the record's field,
// detail.class the class): by the service, and by Apply from submit
// version 3 on. An item admitted before (version 2) is not reservable
// under reserve version 2 until an admin rewrites its record, which
// version 2 of the rewrite treats as unreadable.
func TestSensitiveExtensionValuesNeverEnter(t *testing.T) {
	l, s := atVersion(t, 2)
	setup(t, s)
	leaky := `{"resource_reservation":` + leakyRecord(t, "../../etc/passwd") + `}`
	r := req("leaky-service")
	r.Metadata = json.RawMessage(leaky)
	e := refusedFSM(t, l, "via the service", errs.CodeInvalid, extension.ReasonInvalid, func() error { _, err := s.Submit(as(member), r); return err })
	if e.Detail["field"] != "metadata.resource_reservation.repository" || e.Detail["class"] != extension.ClassPath {
		t.Fatalf("via the service: detail %v", e.Detail)
	}
	if err := rawSubmitMeta(l, "old", leaky); err != nil {
		t.Fatalf("submit version 2 admits what it admitted: %v", err)
	}
	if err := l.Enable(fsm.ServedBy(workitem.Module())); err != nil {
		t.Fatal(err)
	}
	for value, class := range map[string]string{"file:///etc/passwd": extension.ClassURL, "rm -rf / && curl http://x": extension.ClassShell,
		"ghp_" + strings.Repeat("a1B2", 9): extension.ClassToken} {
		e := refusedFSM(t, l, value+" in Apply", errs.CodeInvalid, extension.ReasonInvalid, func() error {
			return rawSubmitMeta(l, "new", `{"resource_reservation":`+leakyRecord(t, value)+`}`)
		})
		if e.Detail["field"] != "metadata.resource_reservation.repository" || e.Detail["class"] != class {
			t.Fatalf("%s in Apply: detail %v", value, e.Detail)
		}
	}
	c, err := s.Claim(as(member), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: "old", TTLMs: 3_600_000})
	noErr(t, "claim", err)
	refusedFSM(t, l, "reserve of the old item", errs.CodeConflict, workitem.RefuseNotReservable,
		func() error { _, err := s.Reserve(as(member), reserveOf(c, "")); return err })
	_, clean, err := extension.Seal(baseExt())
	noErr(t, "seal", err)
	_, err = s.RewriteExtension(as(ops), workitem.RewriteExtensionRequest{TenantRef: "t", WorkItemID: "old", Fence: c.Fence, Extension: clean})
	noErr(t, "rewrite of the old item's record", err)
	reserved(t, s, c, "")
}

// Issue 40 item 7: after a claim expired and Tick requeued the item
// (which clears its claimer and keeps its fence), the principal that
// held the reservation releases it and hears it ended, unchanged;
// another member of the tenant is refused, and a controller may.
func TestReleaseAfterClaimExpiry(t *testing.T) {
	l, s := newEnabled(t)
	setup(t, s)
	c := claimed(t, s, "exp", baseExt(), time.Second)
	r := reserved(t, s, c, "h1")
	if r.HeldBy != member.ID {
		t.Fatalf("held_by %q, want %q", r.HeldBy, member.ID)
	}
	l.Advance(2 * time.Second)
	tick(t, l, 100)
	if it := get(t, s, "exp"); it.Status != workitem.StatusPending || it.ClaimedBy != "" || it.Fence != c.Fence {
		t.Fatalf("after the tick: %+v, want pending, no claimer, the same fence", it)
	}
	release := workitem.ReleaseRequest{TenantRef: "t", WorkItemID: "exp", Attempt: c.Attempt, Fence: c.Fence, ReservationID: r.ReservationID}
	refusedFSM(t, l, "another member", errs.CodeForbidden, "", func() error { _, err := s.Release(as(member2), release); return err })
	before := contentHash(t, l.FSM)
	got, err := s.Release(as(member), release)
	noErr(t, "release by its holder", err)
	if got.Reservation.Status != workitem.ReservationEnded || got.Reservation.EndReason != workitem.EndClaimExpired {
		t.Fatalf("release by its holder: %+v, want it ended with its claim", got.Reservation)
	}
	if contentHash(t, l.FSM) != before {
		t.Fatal("releasing an ended reservation changed the state")
	}
	_, err = s.Release(as(ctl), release)
	noErr(t, "release by a controller", err)
}

// A log from before release version 2 replays as it was applied: the
// holder of a requeued item's reservation was refused then.
func TestReleaseVersion1AskedTheCurrentClaimer(t *testing.T) {
	l, s := atVersion(t, 1)
	setup(t, s)
	c := claimed(t, s, "exp", baseExt(), time.Second)
	r := reserved(t, s, c, "h1")
	if r.HeldBy != "" {
		t.Fatalf("reserve version 1 recorded held_by %q", r.HeldBy)
	}
	l.Advance(2 * time.Second)
	tick(t, l, 100)
	release := workitem.ReleaseRequest{TenantRef: "t", WorkItemID: "exp", Attempt: c.Attempt, Fence: c.Fence, ReservationID: r.ReservationID}
	refusedFSM(t, l, "the holder at version 1", errs.CodeForbidden, "", func() error { _, err := s.Release(as(member), release); return err })
}

// Issue 40 item 12: a host agent that restarts counts report_seq from 1
// again once it re-registers (put_host version 2 resets the sequence);
// version 1 kept it, and the agent's reports stayed stale.
func TestReregistrationResetsReportSeq(t *testing.T) {
	for _, v := range []uint16{1, 2} {
		l, s := atVersion(t, v)
		host := workitem.PutHostRequest{HostID: "h", Capacity: workitem.Dimensions{CPUMillis: 1, MemoryMiB: 1, DiskMiB: 1, Processes: 1}}
		_, err := s.PutHost(as(fleet), host)
		noErr(t, "register", err)
		_, err = s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: "h", ReportSeq: 5, DiskFreeMiB: 100})
		noErr(t, "report 5", err)
		restarted := workitem.TelemetryRequest{HostID: "h", ReportSeq: 1, DiskFreeMiB: 90}
		refusedFSM(t, l, "a restarted agent before it registers", errs.CodeConflict, "stale_report", func() error {
			_, err := s.ReportTelemetry(as(fleet), restarted)
			return err
		})
		again, err := s.PutHost(as(fleet), host)
		noErr(t, "register again", err)
		if again.Created {
			t.Fatalf("version %d: a re-registration answers created", v)
		}
		res, err := s.ReportTelemetry(as(fleet), restarted)
		if v == 1 {
			if reason(err) != "stale_report" {
				t.Fatalf("version 1: %v, want stale_report as the log was applied", err)
			}
			continue
		}
		noErr(t, "report 1 after the re-registration", err)
		if res.Host.Telemetry.ReportSeq != 1 || res.Host.Telemetry.DiskFreeMiB != 90 {
			t.Fatalf("after the re-registration: %+v", res.Host.Telemetry)
		}
	}
}

// Issue 40 item 13: a member who did not claim the item resending the
// claimer's completion is refused (403), not answered the stored
// result; completing an item that was cancelled under the presented
// claim is a conflict, not stale_fence. Version 1 answered both as it
// did, for a log applied then.
func TestCompleteRefusals(t *testing.T) {
	for _, v := range []uint16{1, 2} {
		l, s := atVersion(t, v)
		mustSubmit(t, s, req("a"))
		mustSubmit(t, s, req("b"))
		ca, err := s.Claim(as(member), claimReq("w"))
		noErr(t, "claim a", err)
		cb, err := s.Claim(as(member), claimReq("w"))
		noErr(t, "claim b", err)
		done := workitem.CompleteRequest{TenantRef: "t", WorkItemID: ca.WorkItem.WorkItemID, Attempt: ca.Attempt, Fence: ca.Fence, Outcome: workitem.StatusSucceeded}
		_, err = s.Complete(as(member), done)
		noErr(t, "complete a", err)
		_, errOther := s.Complete(as(member2), done)
		_, err2 := s.Complete(as(member), done)
		noErr(t, "the claimer again", err2)
		_, err3 := s.Complete(as(ctl), done)
		noErr(t, "a controller again", err3)
		_, err = s.Cancel(as(member), workitem.CancelRequest{TenantRef: "t", WorkItemID: cb.WorkItem.WorkItemID, Reason: "r"})
		noErr(t, "cancel b", err)
		cancelled := workitem.CompleteRequest{TenantRef: "t", WorkItemID: cb.WorkItem.WorkItemID, Attempt: cb.Attempt, Fence: cb.Fence, Outcome: workitem.StatusSucceeded}
		before := contentHash(t, l.FSM)
		_, errC := s.Complete(as(member), cancelled)
		if contentHash(t, l.FSM) != before {
			t.Fatalf("version %d: completing a cancelled item changed the state", v)
		}
		stale := cancelled
		stale.Fence--
		_, errS := s.Complete(as(member), stale)
		if !errors.Is(errS, errs.StaleFence) {
			t.Fatalf("version %d: another fence: %v, want stale_fence", v, errS)
		}
		if v == 1 {
			if errOther != nil || !errors.Is(errC, errs.StaleFence) {
				t.Fatalf("version 1: resend by another member %v, cancelled %v; want the stored result and stale_fence", errOther, errC)
			}
			continue
		}
		if !errors.Is(errOther, errs.Forbidden) {
			t.Fatalf("resend by another member: %v, want forbidden", errOther)
		}
		if e := errs.From(errC); e == nil || e.Code != errs.CodeConflict || e.Detail["status"] != workitem.StatusCancelled {
			t.Fatalf("completing a cancelled item: %v, want conflict with detail.status cancelled", errC)
		}
	}
}

// Issue 40 item 13: reservations/query takes max_count 1..128 like
// reclaim: 0 is refused, not read as 128.
func TestQueryMaxCount(t *testing.T) {
	_, s := newEnabled(t)
	for _, n := range []int{0, -1, workitem.MaxQueryPage + 1} {
		_, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: n}, fsm.Linearizable)
		if e := errs.From(err); e == nil || e.Code != errs.CodeInvalid || e.Detail["field"] != "max_count" {
			t.Errorf("max_count %d: %v, want invalid naming max_count", n, err)
		}
	}
	for _, n := range []int{1, workitem.MaxQueryPage} {
		_, err := s.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: n}, fsm.Linearizable)
		noErr(t, fmt.Sprintf("max_count %d", n), err)
	}
}

// Issue 40 item 13: a body of claim, complete, reserve or hosts that
// does not decode is 422 naming the field, as submit's is; and a change
// of a host answers created: false.
func TestHTTPDecodeErrorsNameTheField(t *testing.T) {
	l, _ := newEnabled(t)
	routes := map[string]http.Handler{}
	for _, r := range workitem.Domain().Routes(localHost{l}) {
		routes[r.Method+" "+r.Path] = r.Handler
	}
	call := func(route, who string, body string) (int, map[string]any) {
		t.Helper()
		h := routes[route]
		if h == nil {
			t.Fatalf("no route %s", route)
		}
		method, path, _ := strings.Cut(route, " ")
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req = req.WithContext(fsm.WithPrincipal(req.Context(), map[string]identity.Principal{"member": member, "fleet": fleet}[who]))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: %v in %s", route, err, rec.Body)
		}
		return rec.Code, out
	}
	for route, c := range map[string]struct{ body, field string }{
		"POST /v1/workitems/claim":    {`{"tenant_ref":"t","owner_ref":"w","ttl_ms":"soon"}`, "ttl_ms"},
		"POST /v1/workitems/complete": {`{"tenant_ref":"t","work_item_id":"x","attempt":1,"fence":-1,"outcome":"succeeded"}`, "fence"},
		"POST /v1/workitems/reserve":  {`{"tenant_ref":"t","work_item_id":"x","attempt":"1","fence":1}`, "attempt"},
		"POST /v1/workitems/hosts":    {`{"host_id":"h","labels":{},"capacity":{"cpu_millis":"a lot"}}`, "capacity.cpu_millis"},
		"POST /v1/workitems/release":  {`{"tenant_ref":"t","agent":"me"}`, "agent"},
	} {
		code, out := call(route, "member", c.body)
		e, _ := out["error"].(map[string]any)
		detail, _ := e["detail"].(map[string]any)
		if code != http.StatusUnprocessableEntity || detail["field"] != c.field {
			t.Errorf("%s: %d %v, want 422 naming %s", route, code, out, c.field)
		}
	}
	host := `{"host_id":"h","labels":{},"capacity":{"cpu_millis":1,"memory_mib":1,"disk_mib":1,"processes":1}}`
	if code, out := call("POST /v1/workitems/hosts", "fleet", host); code != http.StatusCreated || out["created"] != true {
		t.Fatalf("a new host: %d %v", code, out)
	}
	if code, out := call("POST /v1/workitems/hosts", "fleet", host); code != http.StatusOK || out["created"] != false {
		t.Fatalf("a changed host: %d %v, want 200 with created false", code, out)
	}
}
