package nodes

import (
	"testing"

	"github.com/arbiterhq/arbiter/internal/statestore"
)

// TestTableKeysAreGoMemdbs: the typed indexers of the node tables give
// every row the key go-memdb's field indexers give it.
func TestTableKeysAreGoMemdbs(t *testing.T) {
	rows := map[string][]any{
		tableNodes:  {&storedNode{}, &storedNode{NodeID: "n1"}, &storedNode{NodeID: "a\x00b"}},
		tableLabels: {&labelRow{}, &labelRow{Label: "l"}, &labelRow{NodeID: "n"}, &labelRow{Label: "l", NodeID: "n1"}},
	}
	for _, table := range Module().Tables {
		if len(rows[table.Schema.Name]) == 0 {
			t.Fatalf("no rows to check table %s with", table.Schema.Name)
		}
		if err := statestore.VerifyKeys(table.Schema, rows[table.Schema.Name]...); err != nil {
			t.Error(err)
		}
	}
}
