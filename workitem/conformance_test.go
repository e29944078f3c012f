package workitem_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
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
