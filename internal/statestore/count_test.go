package statestore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/arbiterhq/arbiter/internal/statestore"
	memdb "github.com/hashicorp/go-memdb"
)

// iterCount counts what an iterator yields.
func iterCount(t *testing.T) func(memdb.ResultIterator, error) int {
	return func(it memdb.ResultIterator, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for raw := it.Next(); raw != nil; raw = it.Next() {
			n++
		}
		return n
	}
}

// Len, CountPrefix and CountBelow count what Get and LowerBound yield,
// for unique, non-unique, compound (by a leading field) and signed-number
// indexes, in read
// transactions and in a write transaction after its own writes.
func TestCountsAgreeWithIterators(t *testing.T) {
	for _, sch := range []*memdb.DBSchema{schema(), keyedSchema()} {
		db, err := statestore.NewDB(sch)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		groups := []string{"a", "ab", "b", "\xff", "\xff\xff"}
		insert := func(w *statestore.Txn, rows int) {
			for range rows {
				r := &row{ID: fmt.Sprintf("r%05d", rng.IntN(5000)), Group: groups[rng.IntN(len(groups))], N: uint64(rng.IntN(50)), C: int64(rng.IntN(200) - 100), Tags: []string{"t"}}
				if err := w.Insert("rows", r); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 3 {
			w := db.Txn(true)
			insert(w, 1000)
			w.Commit()
		}
		check := func(txn *statestore.Txn, when string) {
			t.Helper()
			n, err := txn.Len("rows")
			if want := iterCount(t)(txn.Get("rows", "id")); err != nil || n != want {
				t.Fatalf("%s: Len %d (%v), Get yields %d", when, n, err, want)
			}
			for _, g := range groups {
				for _, q := range []struct {
					index string
					args  []any
				}{{"group", []any{g}}, {"gn_prefix", []any{g}}, {"gn_prefix", []any{g, "r01"}}} {
					got, err := txn.CountPrefix("rows", q.index, q.args...)
					if want := iterCount(t)(txn.Get("rows", q.index, q.args...)); err != nil || got != want {
						t.Fatalf("%s: CountPrefix(%s %q) = %d (%v), Get yields %d", when, q.index, q.args, got, err, want)
					}
				}
			}
			for _, g := range groups { // a compound index, by its leading field
				below, err := txn.CountBelow("rows", "gn", g)
				atOrAbove := iterCount(t)(txn.LowerBound("rows", "gn_prefix", g))
				if err != nil || below+atOrAbove != n {
					t.Fatalf("%s: CountBelow(gn %q) = %d (%v), LowerBound yields %d, of %d rows", when, g, below, err, atOrAbove, n)
				}
			}
			for c := int64(-101); c <= 101; c += 7 {
				below, err := txn.CountBelow("rows", "c", c)
				atOrAbove := iterCount(t)(txn.LowerBound("rows", "c", c))
				if err != nil || below+atOrAbove != n {
					t.Fatalf("%s: CountBelow(c %d) = %d (%v), LowerBound yields %d, of %d rows", when, c, below, err, atOrAbove, n)
				}
			}
		}
		check(db.Txn(false), "read")
		w := db.Txn(true)
		insert(w, 500)
		check(w, "write, before its commit")
		w.Abort()
		if _, err := db.Txn(false).Len("nope"); err == nil {
			t.Fatal("Len of a table that does not exist")
		}
	}
}

// BenchmarkCountPrefix counts a group of a quarter of a million rows: the
// cost of a gauge read at scrape time.
func BenchmarkCountPrefix(b *testing.B) {
	db, err := statestore.NewDB(schema())
	if err != nil {
		b.Fatal(err)
	}
	w := db.Txn(true)
	const rows = 1_000_000
	for i := range rows {
		if err := w.Insert("rows", &row{ID: fmt.Sprintf("r%07d", i), Group: string(rune('a' + i%4)), Tags: []string{"t"}}); err != nil {
			b.Fatal(err)
		}
	}
	w.Commit()
	txn := db.Txn(false)
	b.ResetTimer()
	for range b.N {
		if n, err := txn.CountPrefix("rows", "gn_prefix", "b"); err != nil || n != rows/4 {
			b.Fatal(n, err)
		}
	}
}
