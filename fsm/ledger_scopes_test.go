package fsm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// HashedScope reads the tenant out of a tenant-keyed scope and names the
// scope the same request had before, and nothing out of anything else.
func TestHashedScope(t *testing.T) {
	h := fsm.HashedScope{Prefix: "d/op/", HashLen: 4}
	for _, c := range []struct {
		scope, tenant string
		ok            bool
		legacy        string
	}{
		{"d/op/abcd/t", "t", true, "d/op/abcd"},
		{"d/op/abcd/t/u", "t/u", true, "d/op/abcd"},
		{"d/op/abcd/", "", false, "d/op/abcd"}, // no tenant: refused, but once sent so
		{"d/op/abcd", "", false, ""},           // the scope before the switch
		{"d/op/abcdt", "", false, ""},
		{"d/op/ab/t", "", false, ""},
		{"d/other/abcd/t", "", false, ""},
		{"", "", false, ""},
	} {
		tenant, ok := h.Tenant(c.scope)
		if tenant != c.tenant || ok != c.ok {
			t.Errorf("Tenant(%q) = %q %t, want %q %t", c.scope, tenant, ok, c.tenant, c.ok)
		}
		if got := h.Legacy(c.scope); got != c.legacy {
			t.Errorf("Legacy(%q) = %q, want %q", c.scope, got, c.legacy)
		}
	}
	// Keyed writes what Tenant and Legacy read back.
	if got := h.Keyed("d/op/abcd", "t/u", false); got != "d/op/abcd" {
		t.Errorf("Keyed(unkeyed) = %q, want the base", got)
	}
	keyed := h.Keyed("d/op/abcd", "t/u", true)
	if tenant, ok := h.Tenant(keyed); !ok || tenant != "t/u" || h.Legacy(keyed) != "d/op/abcd" {
		t.Errorf("Keyed = %q: Tenant %q %t, Legacy %q; want t/u and the base", keyed, tenant, ok, h.Legacy(keyed))
	}
}

// LedgerScopes learns from the enabled set once, keeps what it learnt,
// and Send sends the other scope once after a refusal of the scope.
func TestLedgerScopesLearnAndCorrect(t *testing.T) {
	ctx := context.Background()
	l, err := fsmtest.New(tallied())
	if err != nil {
		t.Fatal(err)
	}
	var ungated fsm.LedgerScopes
	if ungated.TenantKeyed(ctx, l, cmdTally, 2) {
		t.Fatal("ungated state: keyed, want not (it counts as version 1)")
	}
	if (&fsm.LedgerScopes{}).TenantKeyed(ctx, nil, cmdTally, 2) {
		t.Fatal("no reader: keyed, want not")
	}
	if err := l.Enable(fsm.ServedBy(tallied())); err != nil {
		t.Fatal(err)
	}
	if ungated.TenantKeyed(ctx, l, cmdTally, 2) {
		t.Fatal("a learnt answer was read again")
	}
	var s fsm.LedgerScopes
	if !s.TenantKeyed(ctx, l, cmdTally, 2) {
		t.Fatal("version 2 enabled: not keyed")
	}

	refusal := errors.New("scope refused")
	refused := func(err error) bool { return errors.Is(err, refusal) }
	var sent []bool
	err = s.Send(ctx, l, cmdTally, 2, refused, func(keyed bool) error {
		sent = append(sent, keyed)
		if keyed {
			return refusal
		}
		return nil
	})
	if err != nil || len(sent) != 2 || !sent[0] || sent[1] {
		t.Fatalf("Send after a refusal: %v, sent %v; want keyed, then not", err, sent)
	}
	if s.TenantKeyed(ctx, l, cmdTally, 2) {
		t.Fatal("the correction was not learnt")
	}
	sent = nil
	other := errors.New("another error")
	err = s.Send(ctx, l, cmdTally, 2, refused, func(keyed bool) error {
		sent = append(sent, keyed)
		return other
	})
	if !errors.Is(err, other) || len(sent) != 1 {
		t.Fatalf("Send with another error: %v, sent %v; want it returned after one send", err, sent)
	}
	sent = nil
	err = s.Send(ctx, l, cmdTally, 2, refused, func(keyed bool) error {
		sent = append(sent, keyed)
		return refusal
	})
	if !errors.Is(err, refusal) || len(sent) != 2 {
		t.Fatalf("Send refused twice: %v, sent %v; want the second refusal after two sends", err, sent)
	}
}
