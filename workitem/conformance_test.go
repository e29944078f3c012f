package workitem_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
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
