package loadgen

import (
	"context"
	"testing"
	"time"
)

// TestStartClockLeavesOutTheStepBefore: an op that sleeps 30 ms, then
// starts the clock and sleeps 1 ms, has latencies near 1 ms, not 31; one
// that never starts the clock has its whole call measured.
func TestStartClockLeavesOutTheStepBefore(t *testing.T) {
	run := func(restart bool) Result {
		return Run(context.Background(), 2, 0, 300*time.Millisecond, func(ctx context.Context, _, _ int) error {
			time.Sleep(30 * time.Millisecond)
			if restart {
				StartClock(ctx)
			}
			time.Sleep(time.Millisecond)
			return nil
		})
	}
	whole, part := run(false), run(true)
	if whole.Ops == 0 || part.Ops == 0 || whole.Errors+part.Errors != 0 {
		t.Fatalf("runs: %v / %v", whole, part)
	}
	if whole.P50 < 30*time.Millisecond {
		t.Fatalf("without StartClock p50 %v, want the whole call (>= 30ms)", whole.P50)
	}
	if part.P99 >= 30*time.Millisecond {
		t.Fatalf("with StartClock p99 %v, want only the step after it (< 30ms)", part.P99)
	}
	StartClock(context.Background()) // outside Run: nothing to move, no panic
}
