package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/linearizability"
)

// MaxGenerations bounds the object generations of a run (see
// Recorder.Generation): two per fault, and one before the first.
func MaxGenerations(faults int) int { return 2*faults + 1 }

// Config shapes one run: one cluster, one history, a sequence of faults.
type Config struct {
	Workload Workload
	Nodes    int // 3 or 5 (default 3)
	// TCP runs raft over loopback TCP (raft's NetworkTransport, with its
	// connection pool, pipelining and heartbeat path) instead of the
	// in-memory transport; every fault applies to either.
	TCP     bool
	Clients int    // default 8
	Seed    uint64 // fixes the fault order, targets and client choices
	// Faults are injected one after another, each for Hold, with the
	// cluster required to make WritesAfterHeal state-changing calls after
	// each heal (proof it recovered) before the next.
	Faults          []Fault
	Hold            time.Duration // default 1 s
	WritesAfterHeal int64         // default 20
	Warmup          int64         // writes before the first fault (default 20)
	OpTimeout       time.Duration // default 2 s
	CheckTimeout    time.Duration // porcupine's budget (default 60 s)
	// TakeoverBound is how long a fault that cuts the leader off waits
	// for another node to lead before it fails the run (default 20 s:
	// elections under -race on loaded machines). The control whose fault
	// cuts nothing waits it out, so it sets a shorter one.
	TakeoverBound time.Duration
}

// Report is what a run did.
type Report struct {
	Operations, Decided, Unknown, Dropped int
	Writes                                int64 // state-changing decided calls
	Faults                                []string
	Took                                  time.Duration
	Summary                               string // outcome and error tallies
	ReadBacks                             int    // acknowledged writes read back on every replica
	// Checked says porcupine checked the history against the workload's
	// model and found it linearizable (porcupine.Ok). It is false for a
	// workload without a model (which checks itself in Verify) and for a
	// history porcupine found Illegal or could not decide in time
	// (Unknown), which also fail the run. A test that must check a number
	// of histories counts the reports with Checked set.
	Checked bool
}

func (r Report) String() string {
	return fmt.Sprintf("%d operations (%d decided, %d unknown, %d dropped; %d writes) under %d faults %v in %v; %s",
		r.Operations, r.Decided, r.Unknown, r.Dropped, r.Writes, len(r.Faults), r.Faults, r.Took.Round(time.Millisecond), r.Summary)
}

// The raft log knobs of every harness cluster: small, so that snapshots,
// log compaction and snapshot installs happen during every run.
const (
	snapshotThreshold = 256
	trailingLogs      = 64
)

// Run runs cfg and fails t on any violation: a history porcupine finds
// not linearizable (or cannot decide in time), diverged replicas, a failed
// workload invariant, an unexpected error, or a cluster that did not
// recover after a fault.
func Run(t testing.TB, cfg Config) Report {
	t.Helper()
	return RunOn(t, NewCluster(t, cfg), cfg)
}

// NewCluster starts the cluster Run would run cfg on: cfg.Nodes nodes,
// over TCP if cfg.TCP, with the harness's small raft log. A test that
// must bring a cluster into some state first (a recovery, say) starts it
// here, then calls RunOn.
func NewCluster(t testing.TB, cfg Config) *clustertest.Cluster {
	t.Helper()
	cfg.defaults()
	return clustertest.New(t, clustertest.Options{Nodes: cfg.Nodes, TCP: cfg.TCP, LogDir: nodeLogDir(t), Configure: func(i int, nc *cluster.Config) {
		nc.SnapshotThreshold = snapshotThreshold
		nc.TrailingLogs = trailingLogs
		nc.SnapshotInterval = 500 * time.Millisecond
		if w, ok := cfg.Workload.(nodeConfigurer); ok {
			w.Configure(t, i, nc)
		}
	}})
}

// RunOn runs cfg on c, a healthy cluster from NewCluster (its nodes
// configured as the harness needs), exactly as Run does.
func RunOn(t testing.TB, c *clustertest.Cluster, cfg Config) Report {
	t.Helper()
	cfg.defaults()
	if len(cfg.Faults) > len(Faults) {
		// Workloads size their objects for MaxGenerations(len(Faults)).
		t.Fatalf("chaos: %d faults in one run; at most %d (one per kind) fit the workloads' generations", len(cfg.Faults), len(Faults))
	}
	began := time.Now()
	t.Logf("chaos: %s seed %d, faults %v", cfg.Workload.Name(), cfg.Seed, faultNames(cfg.Faults))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cfg.Workload.Setup(ctx, c); err != nil {
		t.Fatalf("chaos: %s setup: %v", cfg.Workload.Name(), err)
	}

	h := linearizability.NewHistory()
	rec := newRecorder(h, cfg.OpTimeout)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	env := &Env{
		C:   c,
		Rng: rng,
		Mark: func(format string, args ...any) {
			h.Mark("fault", fmt.Sprintf(format, args...))
			t.Logf("chaos: %v: "+format, append([]any{time.Since(began).Round(time.Millisecond)}, args...)...)
		},
		WaitWrites:    func(n int64) bool { return waitWrites(c, rec, n) },
		Errorf:        t.Errorf,
		TakeoverBound: cfg.TakeoverBound,
	}

	stop := startClients(c, cfg, rec)
	defer stop()
	if !env.WaitWrites(cfg.Warmup) {
		t.Fatalf("chaos: %s: no %d writes before the first fault; %s", cfg.Workload.Name(), cfg.Warmup, rec.summary())
	}
	report := Report{}
	clock := watchClock(c)
	for _, f := range cfg.Faults {
		report.Faults = append(report.Faults, f.Name)
		env.Mark("inject %s", f.Name)
		rec.phase.Add(1)
		heal := f.Inject(env)
		time.Sleep(cfg.Hold)
		heal()
		env.Mark("healed %s", f.Name)
		rec.phase.Add(1)
		c.WaitLeader(timeout)
		clock.check(f.Name, t.Errorf)
		if !env.WaitWrites(cfg.WritesAfterHeal) {
			t.Errorf("chaos: %s: fewer than %d writes within %v after %s healed: the cluster did not recover; %s",
				cfg.Workload.Name(), cfg.WritesAfterHeal, progressBound, f.Name, rec.summary())
			break
		}
	}
	stop()
	clock.check("the last fault", t.Errorf)

	counts := h.Counts()
	report.Operations = counts.Returned + counts.Unknown + counts.Dropped
	report.Decided, report.Unknown, report.Dropped = counts.Returned, counts.Unknown, counts.Dropped
	report.Writes = rec.effective.Load()
	report.Summary = rec.summary() + "; " + clock.String()
	if s, ok := cfg.Workload.(interface{ Summary() string }); ok {
		report.Summary += "; " + s.Summary()
	}
	report.Took = time.Since(began)
	t.Logf("chaos: %s seed %d: %s", cfg.Workload.Name(), cfg.Seed, report)

	for _, u := range rec.unexpected() {
		t.Errorf("chaos: unexpected error (neither a decision nor unavailable): %s", u)
	}
	if counts.Pending != 0 {
		t.Errorf("chaos: %d operations were never resolved", counts.Pending)
	}
	c.Heal()
	c.WaitConverged(timeout)
	if m, ok := cfg.Workload.Model(); ok {
		rewritten := true
		if r, ok := cfg.Workload.(historyRewriter); ok {
			if err := r.RewriteHistory(ctx, c.Node(c.Running()[0]), h); err != nil {
				t.Errorf("chaos: %s seed %d: %v", cfg.Workload.Name(), cfg.Seed, err)
				rewritten = false
			}
		}
		if res := linearizability.Check(t, m, h, cfg.CheckTimeout); res != porcupine.Ok {
			t.Errorf("chaos: %s seed %d: linearizability check %s", cfg.Workload.Name(), cfg.Seed, res)
		} else {
			report.Checked = rewritten
		}
	}
	for _, i := range c.Running() {
		if err := cfg.Workload.Verify(ctx, c.Node(i)); err != nil {
			t.Errorf("chaos: %s seed %d: n%d: %v", cfg.Workload.Name(), cfg.Seed, i+1, err)
		}
		n, problems := rec.verifyReadBacks(ctx, c.Node(i))
		for _, p := range problems {
			t.Errorf("chaos: %s seed %d: n%d lost a write: %v", cfg.Workload.Name(), cfg.Seed, i+1, p)
		}
		report.ReadBacks = n
	}
	if report.Writes > 0 && report.ReadBacks == 0 {
		t.Errorf("chaos: %s acknowledged %d writes and read none back", cfg.Workload.Name(), report.Writes)
	}
	t.Logf("chaos: %s seed %d: read back %d acknowledged writes on each of %d replicas", cfg.Workload.Name(), cfg.Seed, report.ReadBacks, len(c.Running()))
	if n := c.Truncations(); n != 0 {
		t.Errorf("chaos: %s seed %d: raft truncated entries a replica had already applied, %d times (see the nodes' logs)", cfg.Workload.Name(), cfg.Seed, n)
	}
	if n := c.Rewinds(); n != 0 {
		t.Errorf("chaos: %s seed %d: %d snapshot restores moved a replica's applied index backwards (see the nodes' logs)", cfg.Workload.Name(), cfg.Seed, n)
	}
	return report
}

func (cfg *Config) defaults() {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Clients == 0 {
		cfg.Clients = 8
	}
	if cfg.Hold == 0 {
		cfg.Hold = time.Second
	}
	if cfg.WritesAfterHeal == 0 {
		cfg.WritesAfterHeal = 20
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 20
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = 2 * time.Second
	}
	if cfg.CheckTimeout == 0 {
		cfg.CheckTimeout = time.Minute
	}
	if cfg.TakeoverBound == 0 {
		cfg.TakeoverBound = timeout
	}
}

// LogsEnv names a directory that receives every node's log of every run,
// one directory per run, kept only when the run fails (or the process
// dies in it): for soaks, where a failure may not come back.
const LogsEnv = "ARBITER_CHAOS_LOGS"

// nodeLogDir is this run's log directory under LogsEnv ("" if unset); a
// passing run's is removed at the end.
func nodeLogDir(t testing.TB) string {
	root := os.Getenv(LogsEnv)
	if root == "" {
		return ""
	}
	dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos: node logs in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// progressBound is how long the harness waits for clients' progress.
const progressBound = 30 * time.Second

func waitWrites(c *clustertest.Cluster, rec *Recorder, n int64) bool {
	target := rec.effective.Load() + n
	return c.Eventually(progressBound, func() bool { return rec.effective.Load() >= target })
}

// failureBackoff is how long a client waits after a step in which a call
// failed, as a real client would before it tries again. Without it a
// client whose node loses every reply at once (a cut link fails a read at
// once, not at the timeout) fires dozens of calls of unknown outcome at
// one object within milliseconds: each stays pending to the end of the
// object's history, and porcupine cannot decide the order of so many in
// time.
const failureBackoff = 100 * time.Millisecond

// startClients runs every client until the returned stop is called (which
// waits for them). Client i talks to node i mod size while it runs, else
// to another running node, as a client with a list of addresses would.
func startClients(c *clustertest.Cluster, cfg Config, rec *Recorder) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < cfg.Clients; i++ {
		client := cfg.Workload.Client(i, cfg.Seed)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				node := pickNode(c, i)
				if node == nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				client.Step(node, rec)
				if rec.takeFailed(i) {
					time.Sleep(failureBackoff)
				}
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

func pickNode(c *clustertest.Cluster, i int) *cluster.Node {
	if n := c.Node(i % c.Size()); n != nil {
		return n
	}
	for _, j := range c.Running() {
		if n := c.Node((j + i) % c.Size()); n != nil {
			return n
		}
	}
	return nil
}

// Schedule returns every fault once, in an order fixed by seed.
func Schedule(seed uint64) []Fault {
	out := append([]Fault(nil), Faults...)
	rand.New(rand.NewPCG(seed, 1)).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func faultNames(fs []Fault) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}
