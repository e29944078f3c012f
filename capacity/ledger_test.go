package capacity_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

// Issue 40 item 4: the idempotency ledger of a keyed capacity command
// (acquire, renew, release) is keyed by (graph, tenant, key), not by
// principal. Principals of this file: p1 and p2, members of tenant t;
// ou, a member of tenant u.
var (
	ledgerP1 = identity.Principal{ID: "p1", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}}
	ledgerP2 = identity.Principal{ID: "p2", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}}
	ledgerOu = identity.Principal{ID: "ou", Tenants: []string{"u"}, Roles: []string{identity.RoleMember}}
	ledgerRd = identity.Principal{ID: "rd", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}}
)

func asP(p identity.Principal) context.Context {
	return fsm.WithPrincipal(context.Background(), p)
}

// capsAt is the served set with capacity_acquire at version acq and the
// other capacity commands at version other: capsAt(3, 2) is what a
// cluster of the binary from before tenant-keyed ledgers enabled.
func capsAt(acq, other uint16) fsm.Capabilities {
	set := fsmtest.AtVersion(fsm.ServedBy(capacity.Module()), capacity.Name, other)
	for i := range set.Domains {
		if set.Domains[i].Name != capacity.Name {
			continue
		}
		for j := range set.Domains[i].Commands {
			if set.Domains[i].Commands[j].Type == capacity.CmdAcquire {
				set.Domains[i].Commands[j].Version = acq
			}
		}
	}
	return set
}

// ownAcquire is an acquire of one gpu of cell c under key, for the owner
// digest of principal p.
func ownAcquire(key string, p identity.Principal) capacity.AcquireRequest {
	r := acquire(key, capacity.Demand{CellID: "c", ResourceClass: "gpu", Amount: 1})
	r.OwnerDigest = p.OwnerDigest()
	return r
}

// capTenantScope is the tenant-keyed idempotency scope: the scope of the
// operation in (graph, tenant), "/" and the tenant.
func capTenantScope(op, tenant, graph string) string {
	return capGraphScope(op, tenant, graph) + "/" + tenant
}

// unchangedBy requires that call fails with code and leaves the
// capacity tables as they were.
func unchangedBy(t *testing.T, l *fsmtest.Local, what string, code errs.Code, call func() error) {
	t.Helper()
	before := readStored(t, l.FSM).capacityDigest()
	if err := call(); errs.CodeOf(err) != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	if readStored(t, l.FSM).capacityDigest() != before {
		t.Fatalf("%s changed the capacity tables", what)
	}
}

// A second member of the tenant repeating an acquire's key and request
// gets the first grant, replayed, and nothing more is charged; another
// request under the key is idempotency_conflict; a principal of another
// tenant is refused before the ledger is read. Renew and release alike.
func TestAcquireKeyIsTheTenants(t *testing.T) {
	l, s := newGatedService(t)
	cell(t, s, "c", map[string]uint64{"gpu": 4})
	first, err := s.Acquire(asP(ledgerP1), ownAcquire("shared", ledgerP1))
	if err != nil {
		t.Fatal(err)
	}
	var again *capacity.AcquireResult
	unchangedBy(t, l, "the same acquire by a second member", "", func() error {
		again, err = s.Acquire(asP(ledgerP2), ownAcquire("shared", ledgerP1))
		return err
	})
	if !again.Replayed || len(again.Leases) != 1 || again.Leases[0].LeaseID != first.Leases[0].LeaseID || again.Leases[0].Fence != first.Leases[0].Fence {
		t.Fatalf("the same acquire by a second member: %+v, want the first grant %+v replayed", again, first)
	}
	unchangedBy(t, l, "another acquire under the key", errs.CodeIdempotencyConflict, func() error {
		_, err := s.Acquire(asP(ledgerP2), ownAcquire("shared", ledgerP2))
		return err
	})
	unchangedBy(t, l, "the acquire by a principal of another tenant", errs.CodeForbidden, func() error {
		_, err := s.Acquire(asP(ledgerOu), ownAcquire("shared", ledgerP1))
		return err
	})
	// A reader of the tenant may not acquire, so the ledger does not
	// answer it either: no grant (its lease and fence) replayed to it.
	unchangedBy(t, l, "the same acquire by a reader of the tenant", errs.CodeForbidden, func() error {
		_, err := s.Acquire(asP(ledgerRd), ownAcquire("shared", ledgerP1))
		return err
	})
	// A principal of tenant u naming tenant t's scope for a request of
	// its own tenant is refused before the ledger (forbidden), not by
	// the handler's scope check.
	payload := log.MustMarshal(map[string]any{
		"tenant_ref": "u", "work_item_id": "w", "owner_digest": ledgerOu.OwnerDigest(), "priority": 0,
		"demands": []map[string]any{{"cell_id": "c", "resource_class": "gpu", "amount": 1}}, "lease_id": "", "ttl_ms": 1000,
	})
	unchangedBy(t, l, "tenant t's scope named by a principal of tenant u", errs.CodeForbidden, func() error {
		res, err := l.Propose(asP(ledgerOu), log.Command{Type: capacity.CmdAcquire, Version: 1,
			IdemScope: capTenantScope("acquire", "t", ""), IdemKey: "shared", Payload: payload})
		if err != nil {
			return err
		}
		if res.Err != nil {
			return res.Err
		}
		return nil
	})
	if used := usedOf(t, s, "c"); used != 1 {
		t.Fatalf("cell c has %d gpu in use, want 1", used)
	}

	// Renew and release: keyed, the second member's repeat is replayed.
	ref := first.Leases[0].Ref()
	renew := capacity.LeasesRequest{TenantRef: "t", OwnerDigest: ledgerP1.OwnerDigest(), Leases: []capacity.LeaseRef{ref}, IdempotencyKey: "rk"}
	renewed, err := s.Renew(asP(ledgerP1), renew)
	if err != nil {
		t.Fatal(err)
	}
	var renewedAgain *capacity.LeasesResult
	unchangedBy(t, l, "the same renewal by a second member", "", func() error {
		renewedAgain, err = s.Renew(asP(ledgerP2), renew)
		return err
	})
	if !renewedAgain.Replayed || renewedAgain.Leases[0].LeaseEpoch != renewed.Leases[0].LeaseEpoch {
		t.Fatalf("the same renewal by a second member: %+v, want %+v replayed", renewedAgain, renewed)
	}
	release := capacity.LeasesRequest{TenantRef: "t", OwnerDigest: ledgerP1.OwnerDigest(), Leases: renewed.Refs(), IdempotencyKey: "xk"}
	if _, err := s.Release(asP(ledgerP1), release); err != nil {
		t.Fatal(err)
	}
	released, err := s.Release(asP(ledgerP2), release)
	if err != nil || !released.Replayed {
		t.Fatalf("the same release by a second member: %+v %v, want it replayed", released, err)
	}
}

// Below the tenant-keyed versions (capacity_acquire 4, renew and release
// 3) keys stay per principal, as an older log was applied: a second
// member repeating the first's request runs it (and is refused: the
// owner digest is not its own), and its own request under the key is a
// second grant, not a conflict.
func TestLedgerKeyBelowTheTenantVersions(t *testing.T) {
	for name, enable := range map[string]func(*fsmtest.Local) error{
		"ungated":         func(*fsmtest.Local) error { return nil },
		"graphs enabled":  func(l *fsmtest.Local) error { return l.Enable(capsAt(3, 2)) },
		"pregraph enable": func(l *fsmtest.Local) error { return l.Enable(pregraphSet()) },
	} {
		t.Run(name, func(t *testing.T) {
			l, s := newService(t)
			if err := enable(l); err != nil {
				t.Fatal(err)
			}
			cell(t, s, "c", map[string]uint64{"gpu": 4})
			first, err := s.Acquire(asP(ledgerP1), ownAcquire("k", ledgerP1))
			if err != nil {
				t.Fatal(err)
			}
			unchangedBy(t, l, "p1's acquire by p2", errs.CodeForbidden, func() error {
				_, err := s.Acquire(asP(ledgerP2), ownAcquire("k", ledgerP1))
				return err
			})
			own, err := s.Acquire(asP(ledgerP2), ownAcquire("k", ledgerP2))
			if err != nil || own.Replayed || own.Leases[0].LeaseID == first.Leases[0].LeaseID {
				t.Fatalf("p2's own acquire under p1's key: %+v %v, want a second grant", own, err)
			}
			if used := usedOf(t, s, "c"); used != 2 {
				t.Fatalf("cell c has %d gpu in use, want 2", used)
			}
		})
	}
}

// A retry across the switch (its first attempt applied below the
// tenant-keyed version, the retry after) gets its first result. A
// service that learnt one scope is refused once when the enabled
// version moves either way, and sends the other.
func TestLedgerKeyFollowsTheEnabledVersion(t *testing.T) {
	l, s := newService(t)
	if err := l.Enable(capsAt(3, 2)); err != nil {
		t.Fatal(err)
	}
	cell(t, s, "c", map[string]uint64{"gpu": 8})
	first, err := s.Acquire(asP(ledgerP1), ownAcquire("k", ledgerP1))
	if err != nil {
		t.Fatal(err)
	}
	ref := first.Leases[0].Ref()
	renew := capacity.LeasesRequest{TenantRef: "t", OwnerDigest: ledgerP1.OwnerDigest(), Leases: []capacity.LeaseRef{ref}, IdempotencyKey: "rk"}
	renewed, err := s.Renew(asP(ledgerP1), renew)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Enable(fsm.ServedBy(capacity.Module())); err != nil {
		t.Fatal(err)
	}
	fresh := capacity.NewService(l, l)
	var retry *capacity.AcquireResult
	unchangedBy(t, l, "k again after the switch", "", func() error {
		retry, err = fresh.Acquire(asP(ledgerP1), ownAcquire("k", ledgerP1))
		return err
	})
	if !retry.Replayed || retry.Leases[0].LeaseID != first.Leases[0].LeaseID {
		t.Fatalf("k again after the switch: %+v, want %+v replayed", retry, first)
	}
	renewRetry, err := fresh.Renew(asP(ledgerP1), renew)
	if err != nil || !renewRetry.Replayed || renewRetry.Leases[0].LeaseEpoch != renewed.Leases[0].LeaseEpoch {
		t.Fatalf("rk again after the switch: %+v %v, want %+v replayed", renewRetry, err, renewed)
	}

	// s learnt the old scope: refused once, it sends the new one.
	third, err := s.Acquire(asP(ledgerP1), ownAcquire("k3", ledgerP1))
	if err != nil || third.Replayed {
		t.Fatalf("k3 through a service that learnt the old scope: %+v %v", third, err)
	}
	again, err := fresh.Acquire(asP(ledgerP2), ownAcquire("k3", ledgerP1))
	if err != nil || !again.Replayed || again.Leases[0].LeaseID != third.Leases[0].LeaseID {
		t.Fatalf("k3 by a second member: %+v %v, want %+v replayed", again, err, third)
	}
	// The old scope names no tenant: the FSM refuses it before the
	// ledger, whoever sends it.
	res, err := l.Propose(asP(ledgerP1), log.Command{Type: capacity.CmdAcquire, Version: 1, IdemScope: capScope("acquire", "t"),
		IdemKey: "k3", Payload: log.MustMarshal(rawOfAcquire(ownAcquire("k3", ledgerP1)))})
	if err != nil || res.Err == nil || res.Err.Code != errs.CodeInvalid || res.Err.Detail["reason"] != fsm.ReasonIdempotencyScope {
		t.Fatalf("the old scope at the tenant-keyed version: %v %v, want invalid %s", err, res.Err, fsm.ReasonIdempotencyScope)
	}

	// The enabled set goes back (a member of the older binary joins): s
	// learnt the new scope, is refused once, and sends the old one.
	if err := l.Enable(capsAt(3, 2)); err != nil {
		t.Fatal(err)
	}
	back, err := s.Acquire(asP(ledgerP1), ownAcquire("k4", ledgerP1))
	if err != nil || back.Replayed {
		t.Fatalf("k4 after the set went back: %+v %v", back, err)
	}
	if used := usedOf(t, s, "c"); used != 3 {
		t.Fatalf("cell c has %d gpu in use, want 3", used)
	}
}

// The tenant-keyed scope is the graph scope followed by "/" and the
// tenant, in a graph other than the default one too; a scope of another
// graph or operation is refused by the handler with detail.field
// idempotency_key.
func TestTenantScopeNamesGraphAndTenant(t *testing.T) {
	l, s := newGatedService(t)
	cellIn(t, s, "g2", "c", map[string]uint64{"gpu": 4})
	payload := log.MustMarshal(map[string]any{
		"tenant_ref": "t", "graph_ref": "g2", "work_item_id": "w", "owner_digest": "o", "priority": 0,
		"demands": []map[string]any{{"cell_id": "c", "resource_class": "gpu", "amount": 1}}, "lease_id": "", "ttl_ms": 1000,
	})
	for _, scope := range []string{capTenantScope("acquire", "t", ""), capTenantScope("renew", "t", "g2"), capTenantScope("acquire", "t", "g3")} {
		res, err := l.Propose(context.Background(), log.Command{Type: capacity.CmdAcquire, Version: 3, IdemScope: scope, IdemKey: "k", Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		if res.Err == nil || res.Err.Code != errs.CodeInvalid || res.Err.Detail["field"] != "idempotency_key" {
			t.Fatalf("acquire in g2 under scope %q: %v, want invalid idempotency_key", scope, res.Err)
		}
	}
	res, err := l.Propose(context.Background(), log.Command{Type: capacity.CmdAcquire, Version: 3, IdemScope: capTenantScope("acquire", "t", "g2"), IdemKey: "k", Payload: payload})
	if err != nil || res.Err != nil {
		t.Fatalf("acquire in g2 under its own scope: %v %v", err, res.Err)
	}
	sum := sha256.Sum256([]byte("t\x00g2"))
	if want := "capacity/acquire/" + hex.EncodeToString(sum[:16]) + "/t"; capTenantScope("acquire", "t", "g2") != want {
		t.Fatalf("scope %q, want %q", capTenantScope("acquire", "t", "g2"), want)
	}
}
