package statestore_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/internal/statestore"
	"pgregory.net/rapid"
)

// TestLoadGivesWhatInsertGives loads rows that come mostly in ascending
// key order, as a snapshot's do, with runs out of order and repeated keys
// among them, into one store with Load and another with Insert, over
// enough rows to split leaves and inner nodes and over several
// transactions (so Load also meets trees shared with a committed
// version): every index of both stores must hold the same rows in the
// same order, and a read transaction begun before a later load must not
// see it.
func TestLoadGivesWhatInsertGives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		loaded, err := statestore.NewDB(keyedSchema())
		if err != nil {
			t.Fatal(err)
		}
		inserted, err := statestore.NewDB(keyedSchema())
		if err != nil {
			t.Fatal(err)
		}
		next := 0
		for tx := range rapid.IntRange(1, 3).Draw(t, "transactions") {
			before := loaded.Txn(false)
			seen := all(t, before, "rows", "id")
			l, w := loaded.Txn(true), inserted.Txn(true)
			for i := range rapid.IntRange(0, 800).Draw(t, "rows") {
				id := next
				switch rapid.IntRange(0, 9).Draw(t, "order") {
				case 0: // out of order: any key so far or a little ahead
					id = rapid.IntRange(0, next+5).Draw(t, "key")
				case 1: // the same key again
					id = max(next-1, 0)
				default:
					next++
				}
				r := &row{ID: fmt.Sprintf("k%06d", id), Group: fmt.Sprint(id % 7), N: uint64(tx*1000 + i), Tags: []string{fmt.Sprint(i % 3)}}
				for _, table := range []string{"rows", "other"} {
					if err := l.Load(table, r); err != nil {
						t.Fatalf("load %s: %v", r.ID, err)
					}
					if err := w.Insert(table, r); err != nil {
						t.Fatalf("insert %s: %v", r.ID, err)
					}
				}
			}
			l.Commit()
			w.Commit()
			if got := all(t, before, "rows", "id"); !slices.Equal(got, seen) {
				t.Fatalf("a read transaction begun before the load sees %d rows, had %d", len(got), len(seen))
			}
		}
		lr, wr := loaded.Txn(false), inserted.Txn(false)
		for _, ix := range [][2]string{{"rows", "id"}, {"rows", "group"}, {"rows", "n"}, {"rows", "tags"}, {"rows", "gn"}, {"other", "id"}} {
			if got, want := all(t, lr, ix[0], ix[1]), all(t, wr, ix[0], ix[1]); !slices.Equal(got, want) {
				t.Fatalf("%s by %s: loaded %d rows, inserted %d, first difference at %d", ix[0], ix[1], len(got), len(want), firstDiff(got, want))
			}
		}
	})
}

// all is every row of table in the order of index, each with every field.
func all(t *rapid.T, txn *statestore.Txn, table, index string) []string {
	it, err := txn.Get(table, index)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for obj := it.Next(); obj != nil; obj = it.Next() {
		out = append(out, fmt.Sprintf("%+v", *obj.(*row)))
	}
	return out
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
