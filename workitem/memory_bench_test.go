package workitem_test

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// BenchmarkMemoryPerItem is the live heap an item holds in a bare FSM
// after each step of its life (submitted, claimed, reserved), with and
// without a reservation record, after a GC, as live-B/item; the first
// steps of BenchmarkCommand's life make the items (the test's copy of
// the log is dropped before measuring: fsmtest keeps every entry). A node of the nodes
// domain holds about 700 bytes (fsm's BenchmarkMemoryPerRecord); a
// server's RSS per item is this times what the collector leaves
// (--gc-percent). With ARBITER_HEAP_PROFILE=FILE it writes the heap
// profile while the items are live:
//
//	go test ./workitem -run '^$' -bench BenchmarkMemoryPerItem -benchtime 20000x
func BenchmarkMemoryPerItem(b *testing.B) {
	for _, c := range []struct {
		name  string
		steps []func(*benchLife, int) error
	}{
		{"submitted", []func(*benchLife, int) error{(*benchLife).submitPlain}},
		{"submitted-with-record", []func(*benchLife, int) error{(*benchLife).submitRecord}},
		{"claimed", []func(*benchLife, int) error{(*benchLife).submitPlain, (*benchLife).claim}},
		{"reserved", []func(*benchLife, int) error{(*benchLife).submitRecord, (*benchLife).claim, (*benchLife).reserve}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := newBenchLife(b, 4)
			l.local.ForgetLog()
			before := fsmtest.LiveHeap()
			b.ResetTimer()
			for i := range b.N {
				for step, f := range c.steps {
					if err := f(l, i); err != nil {
						b.Fatalf("step %d of item %d: %v", step, i, err)
					}
				}
			}
			b.StopTimer()
			l.claims, l.res = nil, nil // what the life kept for later steps is the test's, not the state's
			l.local.ForgetLog()
			after := fsmtest.LiveHeap()
			b.ReportMetric(float64(int64(after)-int64(before))/float64(b.N), "live-B/item")
			if path := os.Getenv("ARBITER_HEAP_PROFILE"); path != "" {
				f, err := os.Create(path + "." + c.name)
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
			runtime.KeepAlive(l)
		})
	}
}
