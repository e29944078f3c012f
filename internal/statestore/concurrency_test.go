package statestore_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/statestore"
)

// TestReadersSeeWholeCommits: while one writer commits transactions of two
// rows each (and deletes old pairs), readers on other goroutines walk the
// committed state and must always see whole pairs. Run with -race, it
// also checks that publishing copy-on-write trees races with no read.
func TestReadersSeeWholeCommits(t *testing.T) {
	db, err := statestore.NewDB(schema())
	if err != nil {
		t.Fatal(err)
	}
	const commits = 300
	var wg sync.WaitGroup
	done := make(chan struct{})
	errc := make(chan error, 4)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				r := db.Txn(false)
				it, err := r.Get("rows", "group", "pair")
				if err != nil {
					errc <- err
					return
				}
				n := 0
				for obj := it.Next(); obj != nil; obj = it.Next() {
					n++
				}
				if n%2 != 0 {
					errc <- fmt.Errorf("a reader saw %d rows of pairs: half a commit", n)
					return
				}
			}
		}()
	}
	for i := range commits {
		w := db.Txn(true)
		for _, side := range []string{"l", "r"} {
			if err := w.Insert("rows", &row{ID: fmt.Sprintf("%05d%s", i, side), Group: "pair"}); err != nil {
				t.Fatal(err)
			}
		}
		if i >= 10 { // keep the table small: drop the pair of ten commits ago
			for _, side := range []string{"l", "r"} {
				if err := w.Delete("rows", &row{ID: fmt.Sprintf("%05d%s", i-10, side)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.Commit()
	}
	close(done)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	it, err := db.Txn(false).Get("rows", "group", "pair")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for obj := it.Next(); obj != nil; obj = it.Next() {
		n++
	}
	if n != 20 {
		t.Fatalf("%d rows after the writes, want the last 10 pairs", n)
	}
}

// TestOneReadTxnSharedByGoroutines: a read transaction changes nothing in
// itself, so goroutines may share one; FirstString on it must not race
// (run with -race) and must find what was committed before it began.
func TestOneReadTxnSharedByGoroutines(t *testing.T) {
	db, err := statestore.NewDB(keyedSchema())
	if err != nil {
		t.Fatal(err)
	}
	w := db.Txn(true)
	for i := range 50 {
		if err := w.Insert("rows", &row{ID: fmt.Sprintf("r%02d", i), Group: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	w.Commit()
	r := db.Txn(false)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := fmt.Sprintf("r%02d", (i+g)%60)
				obj, err := r.FirstString("rows", "id", id)
				if err != nil {
					errc <- err
					return
				}
				if found := obj != nil; found != ((i+g)%60 < 50) {
					errc <- fmt.Errorf("%s: found %v", id, found)
					return
				}
				if obj != nil && obj.(*row).ID != id {
					errc <- fmt.Errorf("%s: found %s", id, obj.(*row).ID)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// TestReaderWaitsForAnInPlaceWrite: a write transaction on a state nobody
// has read changes its trees in place, so a reader that begins meanwhile
// must wait for the commit and see all of it, never the half written so
// far. The pause only lets a reader that does not wait read too early.
func TestReaderWaitsForAnInPlaceWrite(t *testing.T) {
	db, err := statestore.NewDB(schema())
	if err != nil {
		t.Fatal(err)
	}
	w := db.Txn(true)
	if err := w.Insert("rows", &row{ID: "a", Group: "pair"}); err != nil {
		t.Fatal(err)
	}
	seen := make(chan int)
	go func() {
		it, err := db.Txn(false).Get("rows", "group", "pair")
		if err != nil {
			seen <- -1
			return
		}
		n := 0
		for obj := it.Next(); obj != nil; obj = it.Next() {
			n++
		}
		seen <- n
	}()
	time.Sleep(50 * time.Millisecond)
	if err := w.Insert("rows", &row{ID: "b", Group: "pair"}); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	if n := <-seen; n != 2 {
		t.Fatalf("a reader begun during the write saw %d rows, want the whole commit's 2", n)
	}
	// A reader now holds the state: the next writer copies, and the
	// reader keeps what it saw.
	r := db.Txn(false)
	w = db.Txn(true)
	if err := w.Delete("rows", &row{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	w.Commit()
	if obj, err := r.First("rows", "id", "a"); err != nil || obj == nil {
		t.Fatalf("the held reader lost row a: %v %v", obj, err)
	}
}

// The goroutine that holds the write transaction must not begin a read
// one: in race builds (ownerCheck) it panics naming the rule instead of
// waiting for itself; another goroutine's read goes on.
func TestReadByTheWritersGoroutineIsCaught(t *testing.T) {
	if !statestore.OwnerCheck {
		t.Skip("the ownership check runs in race builds only (go test -race)")
	}
	db, err := statestore.NewDB(schema())
	if err != nil {
		t.Fatal(err)
	}
	w := db.Txn(true)
	done := make(chan struct{})
	go func() { // another goroutine may read while the write is open
		defer close(done)
		db.Txn(false)
	}()
	<-done
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "holds the write transaction") {
				t.Errorf("a read begun by the writer's goroutine: recovered %v, want the ownership panic", r)
			}
		}()
		db.Txn(false)
	}()
	w.Abort()
	db.Txn(false) // once the write has ended, the same goroutine reads
}
