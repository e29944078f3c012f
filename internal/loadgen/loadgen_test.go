package loadgen

import (
	"context"
	"errors"
	"sync"
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

// TestVerifyFindsEveryAcknowledgedCall: Run records exactly the calls
// that succeeded (warmup included), and Verify reads back each of them
// once and counts the ones its check cannot find.
func TestVerifyFindsEveryAcknowledgedCall(t *testing.T) {
	var mu sync.Mutex
	written := map[[2]int]bool{}
	res := Run(context.Background(), 4, 20*time.Millisecond, 100*time.Millisecond, func(_ context.Context, c, seq int) error {
		time.Sleep(time.Millisecond)
		if seq%3 == 0 {
			return errors.New("refused") // not acknowledged: never checked
		}
		mu.Lock()
		written[[2]int{c, seq}] = true
		mu.Unlock()
		return nil
	})
	acked := 0
	for _, seqs := range res.Acked {
		acked += len(seqs)
	}
	if acked != len(written) || acked < res.Ops {
		t.Fatalf("acked %d calls, %d were written (ops %d)", acked, len(written), res.Ops)
	}
	lost := [2]int{1, 1} // client 1's second call succeeded (seq 1 is not a multiple of 3): pretend its write was lost
	if !written[lost] {
		t.Fatalf("client 1 call 1 was not written: %v", res)
	}
	seen := map[[2]int]int{}
	v := Verify(context.Background(), res, 8, func(_ context.Context, c, seq int) error {
		mu.Lock()
		defer mu.Unlock()
		seen[[2]int{c, seq}]++
		if [2]int{c, seq} == lost || !written[[2]int{c, seq}] {
			return errors.New("not found")
		}
		return nil
	})
	if v.Checked != acked || v.Missing != 1 || v.FirstMiss == nil {
		t.Fatalf("verification %v, want %d checked and 1 missing", v, acked)
	}
	for k, n := range seen {
		if n != 1 || !written[k] {
			t.Fatalf("call %v checked %d times (written: %v)", k, n, written[k])
		}
	}
}

// TestClientCPUCountsTheProcessNotTheClock: an op that burns at least
// 1 ms of the process's CPU per call is measured at 1 ms a call or more
// (less the calls that straddle the window's edges); one that sleeps
// 2 ms costs far under 1 ms. A figure taken from the wall clock, or not
// taken, fails one of the two.
func TestClientCPUCountsTheProcessNotTheClock(t *testing.T) {
	if _, ok := processCPU(); !ok {
		t.Skip("no process CPU time on this platform")
	}
	burn := Run(context.Background(), 1, 50*time.Millisecond, 300*time.Millisecond, func(context.Context, int, int) error {
		from, _ := processCPU()
		for {
			if now, _ := processCPU(); now-from >= time.Millisecond {
				return nil
			}
		}
	})
	if burn.Ops < 10 || burn.ClientCPUPerOp() < 800*time.Microsecond {
		t.Fatalf("burning 1 ms of CPU a call: %d ops, client CPU %v a call, want >= 800µs", burn.Ops, burn.ClientCPUPerOp())
	}
	if burn.ClientCPULine() == "" {
		t.Fatal("a measured run has no client CPU line")
	}
	sleep := Run(context.Background(), 1, 50*time.Millisecond, 300*time.Millisecond, func(context.Context, int, int) error {
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	if sleep.Ops < 10 || sleep.ClientCPU <= 0 || sleep.ClientCPUPerOp() >= time.Millisecond {
		t.Fatalf("sleeping 2 ms a call: %d ops, client CPU %v (%v a call), want more than 0 and under 1ms a call", sleep.Ops, sleep.ClientCPU, sleep.ClientCPUPerOp())
	}
}

// TestClientCPUOfACancelledRunIsZero: a run cancelled before its
// window ends reports no client CPU rather than a part of a window.
func TestClientCPUOfACancelledRunIsZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := Run(ctx, 1, 0, 10*time.Second, func(ctx context.Context, _, _ int) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	if res.ClientCPU != 0 || res.ClientCPULine() != "" {
		t.Fatalf("cancelled run: client CPU %v, line %q; want none", res.ClientCPU, res.ClientCPULine())
	}
}
