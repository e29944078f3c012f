package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/retry"
)

// Ops that consume what an earlier command made (a claim takes a pending
// item, a complete ends a claim, a release frees a lease) have it made
// before the run, by a setup that is not measured, so that each measured
// call is that one command and nothing else: its latency, the run's
// ops/s and the servers' CPU over the run are the command's own. What
// the setup made is a benchPool; each call takes the next entry.

// maxBenchPool bounds what one run's setup makes: every entry is a row
// (often several) in every replica's memory for the rest of the
// cluster's life, or until it expires.
const maxBenchPool = 200_000

// setupWorkers is how many calls of one command a setup has in flight:
// enough for group commit to batch them, few enough not to queue behind
// one another past a node's apply timeout. batchWorkers is the same for
// batches of workitem.MaxBatch items, each of which takes as long to
// apply as a hundred single commands.
const (
	setupWorkers = 32
	batchWorkers = 4
)

// setupBudget bounds a setup's time; a setup that has not made its pool
// by then fails the bench (a cluster too slow or too loaded to measure).
const setupBudget = 10 * time.Minute

// setupCallWait bounds one setup call, retries included.
const setupCallWait = time.Minute

// benchTTL is the claim and lease TTL of what the bench makes and leaves
// behind: the longest the domains allow, so that no expiry of a run's
// leftovers lands as work inside a later measured run.
const benchTTL = 24 * time.Hour

// poolOps are the ops whose calls consume a pool.
var poolOps = map[string]bool{"acquire": true, "release": true, "claim": true, "complete": true, "hold-reserve": true, "hold-release": true}

// The automatic pool (--pool 0) is sized by measuring: calibration runs
// (one small setup, then calibrations runs of calibrateFor each of the
// op, nothing reported) give the op's rate on this cluster now, and the
// pool is poolMargin times that over the run's span, plus 64 entries per
// client. The rate is the largest, over the calibration runs, of the
// calls a second each made and of what its median latency allows its
// clients (clients / p50), so that a stall in one short run (a
// snapshot, a collection of a large heap) does not shrink the pool.
// Every entry stays in the nodes' memory (roughly 10 KB of each node's
// RSS per entry in BENCHMARKS.md's "Every domain, one run"), so a pool
// sized for the fastest op on a quiet machine would, for the others,
// leave gigabytes behind on a machine that is shared. A run that drains its
// pool anyway says so (errPoolRanOut).
const (
	calibrateFor = 300 * time.Millisecond
	calibrations = 3
	poolMargin   = 1.5
)

// calibrationPool is the calibrations' pool: room for 1,500 calls a
// second per client, at most 6,000 a second, and 64 more per client.
// That is above what a 3-node cluster syncing its log sustained for any
// op on the project's 2-core machine (at most 1,100 a second with 1
// client, 6,000 with 64); if the calibrations drain it anyway, the op's
// rate is taken as twice what the pool held.
func calibrationPool(clients int) int {
	return int(calibrations*calibrateFor.Seconds()*float64(min(1500*clients, 6000))) + 64*clients
}

// calibratePool measures the op setup builds, as described above, and
// returns the pool of the run env describes.
func calibratePool(setup func(benchEnv) (loadgen.Op, string, error), env benchEnv) (int, error) {
	clients := len(env.remotes)
	cal := env
	cal.prefix, cal.pool, cal.span = env.prefix+"-calibration", calibrationPool(clients), calibrations*calibrateFor
	op, _, err := setup(cal)
	if err != nil {
		return 0, err
	}
	var rate float64
	used, ok := 0, 0
	for range calibrations {
		res := loadgen.Run(context.Background(), clients, 0, calibrateFor, op)
		used += res.Ops + res.Errors
		ok += res.Ops
		rate = max(rate, res.OpsPerSec())
		if res.P50 > 0 {
			rate = max(rate, float64(clients)/res.P50.Seconds())
		}
	}
	if ok == 0 {
		return 0, fmt.Errorf("no call of the calibration runs succeeded")
	}
	if used >= cal.pool { // drained, or nearly: the rate is more than it shows
		rate = max(rate, 2*float64(cal.pool)/cal.span.Seconds())
	}
	return min(int(poolMargin*rate*env.span.Seconds())+64*clients, maxBenchPool), nil
}

// benchPool hands out the entries a setup made, each once, to every
// client of a run in turn.
type benchPool[T any] struct {
	items []T
	next  atomic.Int64
	end   time.Time // when the run ends: a client that finds none left waits for it
}

// newPool returns a pool of items whose run (span long) starts now.
func newPool[T any](items []T, span time.Duration) *benchPool[T] {
	return &benchPool[T]{items: items, end: time.Now().Add(span)}
}

// take returns the next entry. When none is left the caller waits out
// the run (so that a drained pool costs one error per client, not a
// loop of them) and gets errPoolRanOut.
func (p *benchPool[T]) take(ctx context.Context) (T, error) {
	n := p.next.Add(1) - 1
	if n < int64(len(p.items)) {
		return p.items[n], nil
	}
	var zero T
	t := time.NewTimer(time.Until(p.end))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return zero, errPoolRanOut(len(p.items))
}

// op is a load generator's op that takes the next entry and calls call
// with it, within 10 s: each measured call is call alone.
func (p *benchPool[T]) op(call func(ctx context.Context, c, seq int, item T) error) loadgen.Op {
	return func(ctx context.Context, c, seq int) error {
		item, err := p.take(ctx)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return call(ctx, c, seq, item)
	}
}

func errPoolRanOut(n int) error {
	return fmt.Errorf("the %d entries the setup made ran out before the run ended: give a larger --pool", n)
}

// prepare runs jobs calls of job over workers goroutines, each bound to
// remotes[w % len(remotes)], and gathers what they return. A call whose
// outcome is unknown (a leader lost under a loaded machine's load) is
// sent again (retry.Unknown), so every job must send the same request
// each time, keyed or idempotent by itself, and take a replayed answer
// as its own. Any other error stops the setup.
func prepare[T any](remotes []*rawremote.Remote, workers, jobs int, job func(ctx context.Context, r *rawremote.Remote, j int) ([]T, error)) ([]T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupBudget)
	defer cancel()
	var (
		mu    sync.Mutex
		out   []T
		first error
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for w := range min(workers, jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := remotes[w%len(remotes)]
			for {
				j := int(next.Add(1) - 1)
				if j >= jobs || ctx.Err() != nil {
					return
				}
				got, err := retry.Unknown(ctx, func(ctx context.Context) ([]T, error) {
					ctx, cancel := context.WithTimeout(ctx, setupCallWait)
					defer cancel()
					return job(ctx, r, j)
				})
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("setup call %d of %d: %w", j+1, jobs, err)
					cancel()
				}
				out = append(out, got...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out, first
}

// setupCall makes one setup call f, again while its outcome is unknown,
// within setupCallWait; f must be safe to send again (see prepare).
func setupCall[T any](f func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupCallWait)
	defer cancel()
	return retry.Unknown(ctx, f)
}

// perClient is one service per client, built once before the run: a
// program keeps its service, and a service learns what the cluster takes
// on its first call (the workitem and capacity services ask the
// cluster's enabled versions for their ledger scope, fsm.LedgerScopes).
// Built per call, as these ops once did, every measured call paid that
// query too: a work-item submit's server CPU doubled with it.
func perClient[S any](remotes []*rawremote.Remote, build func(r *rawremote.Remote) S) []S {
	out := make([]S, len(remotes))
	for c, r := range remotes {
		out[c] = build(r)
	}
	return out
}
