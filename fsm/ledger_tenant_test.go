package fsm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
)

// tallied is a module whose one keyed command inserts a row per run and
// answers how many rows there are, so a replay (same answer, no new
// row) and a second run (a new row) tell themselves apart. Its ledger
// is keyed by the tenant its scope "tenant:<name>" names from version 2
// on.
const cmdTally log.Type = 902

type tallyRow struct {
	Index uint64 `msgpack:"index"`
}

func tallied() fsm.Module {
	return fsm.Module{
		Name:  "tallied",
		Types: fsm.TypeRange{First: 900, Last: 999}, // left to tests
		Tables: []fsm.Table{{New: func() any { return new(tallyRow) }, Schema: &memdb.TableSchema{
			Name:    "tally",
			Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: &memdb.UintFieldIndex{Field: "Index"}}},
		}}},
		Queries: []fsm.QuerySpec{{Type: 902, Name: "tally_count", Run: func(rt *fsm.ReadTx, _ []byte) (any, error) {
			it, err := rt.Txn.Get("tally", "id")
			if err != nil {
				return nil, err
			}
			n := 0
			for raw := it.Next(); raw != nil; raw = it.Next() {
				n++
			}
			return n, nil
		}}},
		Commands: []fsm.CommandSpec{{Type: cmdTally, Name: "tally", MaxVersion: 2,
			Apply: func(tx *fsm.Tx, cmd *log.Command) (any, error) {
				if err := tx.Insert("tally", &tallyRow{Index: tx.Index}); err != nil {
					return nil, err
				}
				return tx.Index, nil
			},
			LedgerTenant: func(scope string) (string, bool) {
				t, ok := strings.CutPrefix(scope, "tenant:")
				return t, ok && t != ""
			},
			LedgerTenantFrom:  2,
			LedgerLegacyScope: func(scope string) string { return scope }, // the same in both
		}},
	}
}

var (
	tallyA1 = identity.Principal{ID: "a1", Tenants: []string{"x"}, Roles: []string{identity.RoleMember}}
	tallyA2 = identity.Principal{ID: "a2", Tenants: []string{"x"}, Roles: []string{identity.RoleMember}}
	tallyB  = identity.Principal{ID: "b", Tenants: []string{"y"}, Roles: []string{identity.RoleMember}}
	tallyW  = identity.Principal{ID: "w", Tenants: []string{"*"}, Roles: []string{identity.RoleMember}}
)

// tally sends the command as p, with scope, key and payload body.
func tally(t *testing.T, l *fsmtest.Local, p identity.Principal, scope, key, body string) *fsm.Response {
	t.Helper()
	res, err := l.Propose(fsm.WithPrincipal(context.Background(), p),
		log.Command{Type: cmdTally, Version: 1, IdemScope: scope, IdemKey: key, Payload: log.MustMarshal(body)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func newTallied(t *testing.T, version uint16) *fsmtest.Local {
	t.Helper()
	l, err := fsmtest.New(tallied())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Enable(fsmtest.AtVersion(fsm.ServedBy(tallied()), "tallied", version)); err != nil {
		t.Fatal(err)
	}
	return l
}

// From the enabled version on, a key is the tenant's: another principal
// of the tenant gets the first result, replayed, and nothing runs again;
// another request under the key is idempotency_conflict; a principal of
// another tenant is refused before the ledger is read, and so is a scope
// that names no tenant.
func TestLedgerKeyedByTenant(t *testing.T) {
	l := newTallied(t, 2)
	first := tally(t, l, tallyA1, "tenant:x", "k", "body")
	if first.Err != nil || first.Replayed {
		t.Fatalf("first: %+v", first)
	}
	again := tally(t, l, tallyA2, "tenant:x", "k", "body")
	if again.Err != nil || !again.Replayed || string(again.Result) != string(first.Result) || again.Index != first.Index {
		t.Fatalf("another principal of the tenant: %+v, want the first result %+v replayed", again, first)
	}
	star := tally(t, l, tallyW, "tenant:x", "k", "body")
	if star.Err != nil || !star.Replayed || string(star.Result) != string(first.Result) {
		t.Fatalf("a principal of every tenant: %+v, want the first result replayed", star)
	}
	if res := tally(t, l, tallyA2, "tenant:x", "k", "other body"); !errors.Is(res.Err, errs.IdempotencyConflict) {
		t.Fatalf("another request under the key: %+v, want idempotency_conflict", res)
	}
	// The outsider's request is the very one that was recorded: a
	// replay would hand it tenant x's result.
	if res := tally(t, l, tallyB, "tenant:x", "k", "body"); !errors.Is(res.Err, errs.Forbidden) || res.Replayed {
		t.Fatalf("a principal of another tenant: %+v, want forbidden", res)
	}
	res := tally(t, l, tallyA1, "x", "k", "body")
	if e := errs.From(res.Err); e == nil || e.Code != errs.CodeInvalid || e.Detail["reason"] != fsm.ReasonIdempotencyScope || e.Detail["field"] != "idempotency_key" {
		t.Fatalf("a scope that names no tenant: %+v, want invalid, reason %s", res.Err, fsm.ReasonIdempotencyScope)
	}
	// Tenant y's key k is its own.
	if res := tally(t, l, tallyB, "tenant:y", "k", "body"); res.Err != nil || res.Replayed {
		t.Fatalf("the same key in another tenant: %+v, want a run of its own", res)
	}
	if n := tallyRows(t, l); n != 2 {
		t.Fatalf("%d rows, want 2 (one per tenant)", n)
	}
	// A keyless command is not looked up at all, whatever its scope.
	if res := tally(t, l, tallyB, "", "", "body"); res.Err != nil {
		t.Fatalf("keyless: %v", res.Err)
	}
}

// Below the enabled version, rows stay keyed by principal, as an older
// log was applied: a second principal runs its own request, and nothing
// about the scope is judged.
func TestLedgerKeyedByPrincipalBeforeTheVersion(t *testing.T) {
	l := newTallied(t, 1)
	first := tally(t, l, tallyA1, "tenant:x", "k", "body")
	second := tally(t, l, tallyA2, "tenant:x", "k", "body")
	if first.Err != nil || second.Err != nil || second.Replayed {
		t.Fatalf("first %+v, second %+v: want two runs", first, second)
	}
	if again := tally(t, l, tallyA1, "tenant:x", "k", "body"); !again.Replayed || string(again.Result) != string(first.Result) {
		t.Fatalf("the first principal again: %+v, want its result replayed", again)
	}
	if res := tally(t, l, tallyB, "no tenant here", "k", "body"); res.Err != nil {
		t.Fatalf("version 1 judges no scope: %v", res.Err)
	}
	if n := tallyRows(t, l); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
}

func TestLedgerTenantVersionMustBeServed(t *testing.T) {
	for _, from := range []uint16{0, 3} {
		m := tallied()
		m.Commands[0].LedgerTenantFrom = from
		if _, err := fsm.New(fsm.Config{Modules: []fsm.Module{m}}); err == nil {
			t.Errorf("LedgerTenantFrom %d of a command at version 2 accepted", from)
		}
	}
}

func tallyRows(t *testing.T, l *fsmtest.Local) int {
	t.Helper()
	raw, err := l.Query(context.Background(), fsm.Query{Type: 902})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := log.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A retry that straddles the switch to tenant keys finds the row its
// first attempt made before it (LedgerLegacyScope): the same principal
// gets its first result, or idempotency_conflict for another request.
func TestLedgerRetryAcrossTheSwitch(t *testing.T) {
	l, err := fsmtest.New(tallied())
	if err != nil {
		t.Fatal(err)
	}
	m := tallied()
	set := fsm.ServedBy(m)
	if err := l.Enable(fsmtest.AtVersion(set, "tallied", 1)); err != nil {
		t.Fatal(err)
	}
	first := tally(t, l, tallyA1, "tenant:x", "k", "body")
	if err := l.Enable(set); err != nil {
		t.Fatal(err)
	}
	retry := tally(t, l, tallyA1, "tenant:x", "k", "body")
	if retry.Err != nil || !retry.Replayed || string(retry.Result) != string(first.Result) {
		t.Fatalf("the retry after the switch: %+v, want %+v replayed", retry, first)
	}
	if res := tally(t, l, tallyA1, "tenant:x", "k", "other body"); !errors.Is(res.Err, errs.IdempotencyConflict) {
		t.Fatalf("another request under the key after the switch: %+v, want idempotency_conflict", res)
	}
	if n := tallyRows(t, l); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}
