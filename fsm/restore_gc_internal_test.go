package fsm

import (
	"bytes"
	"io"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// gogc is the GC percent in force (-1: off), read without setting it.
func gogc(t *testing.T) int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("/gc/gogc:percent: kind %v", s[0].Value.Kind())
	}
	return int64(s[0].Value.Uint64())
}

// gcSetting sets the GC percent and memory limit for one test and puts
// the process's back after it.
func gcSetting(t *testing.T, percent int, limit int64) {
	oldPercent := debug.SetGCPercent(percent)
	oldLimit := debug.SetMemoryLimit(limit)
	t.Cleanup(func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
}

// gcWatcher is a snapshot stream that records the GC percent in force
// when the restore reads it.
type gcWatcher struct {
	t    *testing.T
	r    io.Reader
	seen []int64
}

func (w *gcWatcher) Read(p []byte) (int, error) {
	w.seen = append(w.seen, gogc(w.t))
	return w.r.Read(p)
}

func (w *gcWatcher) Close() error { return nil }

// restoredStream is the snapshot stream of an FSM with a few rows.
func restoredStream(t *testing.T) (*FSM, []byte) {
	t.Helper()
	f, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := f.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return f, b.Bytes()
}

// TestRestoreTurnsGOGCOffUnderAMemoryLimit: with a memory limit, the
// collector runs on the limit alone while a restore reads its stream,
// and the GC percent is the one set before once the restore ends, also
// when the restore fails.
func TestRestoreTurnsGOGCOffUnderAMemoryLimit(t *testing.T) {
	gcSetting(t, 150, 8<<30)
	f, stream := restoredStream(t)
	w := &gcWatcher{t: t, r: bytes.NewReader(stream)}
	if err := f.Restore(w); err != nil {
		t.Fatal(err)
	}
	if len(w.seen) == 0 || w.seen[0] >= 0 {
		// (-1 reads back as a uint64's wrap; any negative value is off.)
		t.Fatalf("GC percent while restoring: %v, want off", w.seen)
	}
	if got := gogc(t); got != 150 {
		t.Fatalf("GC percent after the restore: %d, want 150", got)
	}
	bad := append(bytes.Clone(stream[:len(stream)-1]), stream[len(stream)-1]^1) // trailer off by a bit
	if err := f.Restore(&gcWatcher{t: t, r: bytes.NewReader(bad)}); err == nil {
		t.Fatal("a stream with a bad trailer restored")
	}
	if got := gogc(t); got != 150 {
		t.Fatalf("GC percent after a failed restore: %d, want 150", got)
	}
}

// TestRestoreLeavesGOGCWithoutAMemoryLimit: without a limit, turning the
// collector off would let a restore's garbage grow without bound.
func TestRestoreLeavesGOGCWithoutAMemoryLimit(t *testing.T) {
	gcSetting(t, 150, math.MaxInt64)
	f, stream := restoredStream(t)
	w := &gcWatcher{t: t, r: bytes.NewReader(stream)}
	if err := f.Restore(w); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.seen {
		if p != 150 {
			t.Fatalf("GC percent while restoring without a limit: %v, want 150 throughout", w.seen)
		}
	}
}

// TestOverlappingRestoresPutGOGCBackOnce: the last of two overlapping
// restores puts the setting back, whichever order they end in.
func TestOverlappingRestoresPutGOGCBackOnce(t *testing.T) {
	gcSetting(t, 150, 8<<30)
	for _, firstEndsFirst := range []bool{true, false} {
		undo1 := relaxGCForRestore()
		undo2 := relaxGCForRestore()
		if firstEndsFirst {
			undo1()
		} else {
			undo2()
		}
		if got := gogc(t); got >= 0 {
			t.Fatalf("GC percent with one restore still under way: %d, want off", got)
		}
		if firstEndsFirst {
			undo2()
		} else {
			undo1()
		}
		if got := gogc(t); got != 150 {
			t.Fatalf("GC percent after both restores: %d, want 150", got)
		}
	}
}
