package fsm

import (
	"math"
	"testing"

	"github.com/arbiterhq/arbiter/internal/statestore"
)

// TestCoreTableKeysAreGoMemdbs: the typed indexers of the core tables
// give every row the key go-memdb's field indexers give it.
func TestCoreTableKeysAreGoMemdbs(t *testing.T) {
	rows := map[string][]any{
		tableMeta:    {&meta{}, &meta{ID: tableMeta}},
		tableIdem:    {&idemRow{}, &idemRow{ID: "p\x00s\x00k", CreatedAt: -5}, &idemRow{ID: "x", CreatedAt: math.MaxInt64}, &idemRow{ID: "y", CreatedAt: math.MinInt64}},
		tableChanges: {&Event{}, &Event{Seq: 1}, &Event{Seq: math.MaxUint64}},
		tableMembers: {&Member{}, &Member{ID: "n1"}},
	}
	for _, table := range coreModule().Tables {
		if len(rows[table.Schema.Name]) == 0 {
			t.Fatalf("no rows to check table %s with", table.Schema.Name)
		}
		if err := statestore.VerifyKeys(table.Schema, rows[table.Schema.Name]...); err != nil {
			t.Error(err)
		}
	}
}
