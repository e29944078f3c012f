package loadgen

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Op performs one operation for client c; seq counts that client's calls.
type Op func(ctx context.Context, c, seq int) error

// clockKey carries, in the context Run passes to an Op, the time the
// current call's latency counts from.
type clockKey struct{}

// StartClock makes the latency of the Op call that ctx belongs to count
// from now: an unmeasured step the call took first (taking the lease a
// publish then uses) is left out of its latency. The call still counts
// as one operation of the run, so throughput is of whole calls. Outside
// Run it does nothing.
func StartClock(ctx context.Context) {
	if t0, ok := ctx.Value(clockKey{}).(*time.Time); ok {
		*t0 = time.Now()
	}
}

// Result summarizes one run.
type Result struct {
	Clients  int
	Duration time.Duration
	Ops      int
	Errors   int
	FirstErr error
	P50      time.Duration
	P99      time.Duration
	P999     time.Duration
	// Acked holds, per client, the seq of every call that succeeded,
	// warmup included (the harness's check that no acknowledged write
	// was lost reads each one back: Verify). At most maxSamples per
	// client; AckedTruncated says some were left out.
	Acked          [][]int32
	AckedTruncated bool
	// ClientCPU is the CPU time (user and system) the whole process
	// running the load spent over the measured window: the clients'
	// side of each operation, which shares the machine with the servers
	// on a loopback benchmark. Zero when not measured (a platform
	// without getrusage, or a run that ended before its window).
	ClientCPU time.Duration
}

// ClientCPUPerOp is ClientCPU over the operations counted, or 0.
func (r Result) ClientCPUPerOp() time.Duration {
	if r.Ops == 0 {
		return 0
	}
	return r.ClientCPU / time.Duration(r.Ops)
}

// ClientCPULine says what ClientCPUPerOp is, for a benchmark's output
// ("" when not measured).
func (r Result) ClientCPULine() string {
	if r.ClientCPU <= 0 || r.Ops == 0 {
		return ""
	}
	return fmt.Sprintf("  client CPU: %d us per operation (%.1f s over the window, the load generator's process)",
		r.ClientCPUPerOp().Microseconds(), r.ClientCPU.Seconds())
}

// OpsPerSec is successful operations per second.
func (r Result) OpsPerSec() float64 { return float64(r.Ops) / r.Duration.Seconds() }

func (r Result) String() string {
	return fmt.Sprintf("clients=%-3d ops/s=%8.0f p50=%-9v p99=%-9v p999=%-9v ops=%d errors=%d",
		r.Clients, r.OpsPerSec(), r.P50, r.P99, r.P999, r.Ops, r.Errors)
}

// maxSamples bounds the latencies kept per client (~64 MiB for 64 clients
// would be far more than a run produces; this keeps memory bounded anyway).
const maxSamples = 1 << 20

// Run calls op from clients goroutines until d has passed (after a warmup
// whose operations are not counted) and returns the summary.
func Run(ctx context.Context, clients int, warmup, d time.Duration, op Op) Result {
	var (
		mu           sync.Mutex
		all          []time.Duration
		errCount     int
		firstErr     error
		wg           sync.WaitGroup
		ackedBy      = make([][]int32, clients)
		anyTruncated bool
	)
	start := time.Now()
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(d)
	cpu := watchCPU(measureFrom, end)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var acked []int32
			truncated := false
			errs := 0
			var first error
			var clock time.Time // StartClock moves it; one per client, as calls are
			cctx := context.WithValue(ctx, clockKey{}, &clock)
			for seq := 0; ; seq++ {
				t0 := time.Now()
				if t0.After(end) || ctx.Err() != nil {
					break
				}
				clock = t0
				err := op(cctx, c, seq)
				if err == nil {
					if len(acked) < maxSamples {
						acked = append(acked, int32(seq))
					} else {
						truncated = true
					}
				}
				if t0.Before(measureFrom) {
					continue
				}
				if err != nil {
					errs++
					if first == nil {
						first = err
					}
				} else if len(lat) < maxSamples {
					lat = append(lat, time.Since(clock))
				}
			}
			mu.Lock()
			ackedBy[c] = acked
			anyTruncated = anyTruncated || truncated
			all = append(all, lat...)
			errCount += errs
			if firstErr == nil {
				firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(all)
	return Result{
		Clients: clients, Duration: d, Ops: len(all), Errors: errCount, FirstErr: firstErr,
		P50: pct(all, 0.50), P99: pct(all, 0.99), P999: pct(all, 0.999),
		Acked: ackedBy, AckedTruncated: anyTruncated, ClientCPU: cpu(),
	}
}

// watchCPU samples the process's CPU time at from and at to, on a
// goroutine of its own; the returned func gives what was spent between
// them, or 0 when the window was not reached (a cancelled run). The
// func must be called once, after to or after the run ended early.
func watchCPU(from, to time.Time) func() time.Duration {
	spent := make(chan time.Duration, 1)
	stop := make(chan struct{})
	go func() {
		at := func(t time.Time) (time.Duration, bool) {
			timer := time.NewTimer(time.Until(t))
			defer timer.Stop()
			select {
			case <-timer.C:
				return processCPU()
			case <-stop:
				return 0, false
			}
		}
		first, ok := at(from)
		if !ok {
			spent <- 0
			return
		}
		last, ok := at(to)
		if !ok {
			spent <- 0
			return
		}
		spent <- last - first
	}()
	return func() time.Duration {
		if time.Now().Before(to) {
			close(stop) // the run ended early: its window is not whole
		}
		return <-spent
	}
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i].Round(10 * time.Microsecond)
}
