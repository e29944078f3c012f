package loadgen

import (
	"context"
	"fmt"
	"sync"
)

// Check reads back what client c's call seq wrote and returns an error
// when it is not there (or the read failed).
type Check func(ctx context.Context, c, seq int) error

// Verification is what Verify found.
type Verification struct {
	Checked   int   // acknowledged calls read back
	Missing   int   // of them, calls whose write was not found
	FirstMiss error // the first such failure, with its key
}

func (v Verification) String() string {
	s := fmt.Sprintf("verified: %d acknowledged writes read back, %d missing", v.Checked, v.Missing)
	if v.FirstMiss != nil {
		s += fmt.Sprintf(" (first: %v)", v.FirstMiss)
	}
	return s
}

// Verify reads back every acknowledged call of res with check, from
// workers goroutines (at least 1, at most 256): the harness's own check
// that no acknowledged write was lost, run after the measured window.
// A read that fails counts as missing: a lost write and an unanswered
// read look the same from here, and both make the figure untrustworthy.
func Verify(ctx context.Context, res Result, workers int, check Check) Verification {
	workers = min(max(workers, 1), 256)
	type call struct{ c, seq int }
	calls := make(chan call)
	var (
		mu sync.Mutex
		v  Verification
		wg sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range calls {
				err := check(ctx, k.c, k.seq)
				mu.Lock()
				v.Checked++
				if err != nil {
					v.Missing++
					if v.FirstMiss == nil {
						v.FirstMiss = fmt.Errorf("client %d call %d: %w", k.c, k.seq, err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for c, seqs := range res.Acked {
		for _, seq := range seqs {
			calls <- call{c, int(seq)}
		}
	}
	close(calls)
	wg.Wait()
	return v
}
