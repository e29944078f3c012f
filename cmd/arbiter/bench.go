package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/spf13/cobra"
)

// benchCommand measures create-if-absent of distinct node ids (or another
// operation) against a running cluster, through the domains' own typed
// clients over the raw msgpack protocol (internal/rawremote, formerly
// cluster.Remote; --op create-json measures the public JSON API), with
// each client bound to one of the given nodes in turn.
func (a *app) benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure throughput and latency of an operation against a cluster",
		Long: `bench runs the operation --op with each client count of --clients, each for
--duration after --warmup, spreading clients over the --addr nodes, and
prints ops/s and p50/p99/p999 latency per run (BENCHMARKS.md). Calls that
fail are counted and the first failure is shown; a run in which every call
failed (a wrong --addr, a cluster that is down) ends bench with exit status 1.

Every op measures one command, and counts a call whose answer is not what
it measures (a claim that claimed nothing) as failed. Ops that consume what
another command made (claim, complete, hold-reserve, hold-release, acquire,
release) take it from a pool that a setup, not measured, makes before each
run (--pool); a run that uses up its pool says so. What the setups make
stays in the cluster. publish takes its lease in each call: its latency is
the publish's, its ops/s the whole cycle's. bench/ops.sh domains runs them
all with the servers' CPU per operation.`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	a.connFlags(fs)
	addrs := fs.String("addrs", "", "comma-separated API URLs of the nodes")
	deprecate(fs, "addrs", "use --addr (or $ARBITER_ADDR)")
	clientList := fs.String("clients", "1,16,64", "comma-separated client counts, one run each")
	duration := fs.Duration("duration", 10*time.Second, "measured time per run")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured time before each run")
	prefix := fs.String("prefix", fmt.Sprintf("bench-%d", time.Now().UnixNano()), "node id prefix (ids must be new)")
	op := fs.String("op", "create", "create (CreateNodeIfAbsent of a new node, over the raw msgpack protocol, internal/rawremote), create-json (the same over the public JSON API, POST /v1/nodes/create, each client on its own connection, as any HTTP client sends it), create-go (the same through the light Go client, package client, each bench client with a client of its own: its idempotency key and failover included), get (a linearizable read of one node), reserve (the concept reservation protocol on a new concept id), lease (acquire then release capacity on --cells cells), acquire (capacity acquire of one lease, kept), release (capacity release of one lease), submit (SubmitWorkItem of a new item), batch (SubmitWorkItems of --batch new items), claim (a work-item claim of a pending item), complete (complete of a claimed item), hold-reserve (a host resource reservation for a claimed item), hold-release (release of one), task (an allocation task create with a new title), channel-submit (a projection producer's submit, watermark rising) or publish (a projection publish, each after an unmeasured lease acquire)")
	pool := fs.Int("pool", 0, fmt.Sprintf("with --op acquire, release, claim, complete, hold-reserve or hold-release: what the unmeasured setup makes before each run, items, leases or claims (0: 1.5 times what the op would use over the warmup and the run at the rate three calibration runs of 300 ms, before the setup, measured; at most %d)", maxBenchPool))
	announce := fs.Bool("announce", false, "write \"bench: measuring\" to stderr as each run's warmup starts, after its setup: a script sampling the servers (bench/ops.sh) starts there")
	cells := fs.Int("cells", 1, "with --op lease: cells per acquire (1..16)")
	batch := fs.Int("batch", workitem.MaxBatch, "with --op batch: items per batch (1..128)")
	verify := fs.Bool("verify", false, "with --op create, create-json or create-go: after each run, read back every acknowledged create (linearizably, from the node its client used; not measured) and fail if one is missing: the harness's own check that no acknowledged write was lost")
	valueBytes := fs.Int("value-bytes", 0, "with --op create, create-json or create-go: also give each node a string property \"value\" of this many bytes of JSON, quotes included (0: none; 2..60000)")
	o := outputFlag(fs, "table")
	cmd.RunE = func(*cobra.Command, []string) error {
		if *addrs != "" && a.addr == "" {
			a.addr = *addrs
		}
		return a.bench(benchOptions{clients: *clientList, duration: *duration, warmup: *warmup, prefix: *prefix, op: *op, cells: *cells, batch: *batch,
			valueBytes: *valueBytes, pool: *pool, announce: *announce, verify: *verify, out: o})
	}
	return cmd
}

type benchOptions struct {
	clients, prefix, op string
	duration, warmup    time.Duration
	cells, batch        int
	valueBytes, pool    int
	announce, verify    bool
	out                 output
}

// benchEnv is what an op with a setup is built from: the run's clients
// (remotes[c] is client c's) and how long the run lasts.
type benchEnv struct {
	prefix  string
	run     int
	remotes []*rawremote.Remote
	pool    int           // --pool
	span    time.Duration // warmup plus measured time
}

// poolSize is what the setup of a pool op makes for this run: --pool,
// or what calibratePool measured.
func (e benchEnv) poolSize() int { return e.pool }

// benchOps are the ops whose setup (not measured) runs before each run;
// each answers a line saying what the setup made.
var benchOps = map[string]func(benchEnv) (loadgen.Op, string, error){
	"acquire": acquireOp, "release": releaseOp, "claim": claimOp, "complete": completeOp,
	"hold-reserve": holdReserveOp, "hold-release": holdReleaseOp, "task": taskOp,
	"channel-submit": channelSubmitOp, "publish": publishOp,
}

// benchRun is one run's result, as -o json prints it.
type benchRun struct {
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Ops       int     `json:"ops"`
	Errors    int     `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
	FirstErr  string  `json:"first_error,omitempty"`
	// ClientCPUUs is this process's CPU time per operation over the
	// measured window (the clients' side; 0 when not measured, as with no
	// operation done).
	ClientCPUUs int64 `json:"client_cpu_us"`
	// With --verify: acknowledged creates read back, and how many of
	// them were missing.
	Verified *int `json:"verified,omitempty"`
	Missing  *int `json:"missing,omitempty"`
}

func (a *app) bench(b benchOptions) error {
	if err := b.out.check(); err != nil {
		return err
	}
	var counts []int
	for _, s := range strings.Split(b.clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 4096 {
			return usageErrorf("--clients: %q is not a client count between 1 and 4096", s)
		}
		if (b.op == "publish" || b.op == "channel-submit") && n > maxProjectionClients {
			return usageErrorf("--op %s takes at most %d clients (each has a projection target), not %d", b.op, maxProjectionClients, n)
		}
		counts = append(counts, n)
	}
	urls := a.addrs()
	if b.valueBytes != 0 && (b.valueBytes < 2 || b.valueBytes > maxBenchValueBytes) {
		return usageErrorf("--value-bytes must be 0 or between 2 and %d", maxBenchValueBytes)
	}
	if b.verify && b.op != "create" && b.op != "create-json" && b.op != "create-go" {
		return usageErrorf("--verify reads back creates: it takes --op create, create-json or create-go, not %q", b.op)
	}
	if b.pool < 0 || b.pool > maxBenchPool {
		return usageErrorf("--pool must be between 0 (automatic) and %d", maxBenchPool)
	}
	var makeOp func(run int, remotes []*rawremote.Remote) loadgen.Op
	var afterRun func() // what a run's op holds open (create-go's clients)
	setupOp := benchOps[b.op]
	switch b.op {
	case "create":
		makeOp = func(run int, remotes []*rawremote.Remote) loadgen.Op {
			return createOp(b.prefix, run, b.valueBytes, remotes)
		}
	case "create-json":
		hc, err := a.httpClient()
		if err != nil {
			return err
		}
		token, err := a.bearer()
		if err != nil {
			return err
		}
		makeOp = func(run int, remotes []*rawremote.Remote) loadgen.Op {
			return createJSONOp(b.prefix, run, b.valueBytes, len(remotes), urls, hc, token)
		}
	case "create-go":
		makeOp = func(run int, remotes []*rawremote.Remote) loadgen.Op {
			clients, err := a.goClients(len(remotes), urls)
			if err != nil {
				return func(context.Context, int, int) error { return err }
			}
			afterRun = func() {
				for _, c := range clients {
					c.Close()
				}
			}
			return createGoOp(b.prefix, run, b.valueBytes, clients)
		}
	case "get":
		makeOp = func(run int, remotes []*rawremote.Remote) loadgen.Op { return getOp(b.prefix, run, remotes) }
	case "reserve":
		makeOp = reserveOp
	case "lease":
		if b.cells < 1 || b.cells > capacity.MaxDemands {
			return usageErrorf("--cells must be between 1 and %d", capacity.MaxDemands)
		}
		makeOp = func(run int, remotes []*rawremote.Remote) loadgen.Op { return leaseOp(b.prefix, run, b.cells, remotes) }
	case "submit":
		makeOp = func(run int, remotes []*rawremote.Remote) loadgen.Op { return submitOp(b.prefix, run, 1, remotes) }
	case "batch":
		if b.batch < 1 || b.batch > workitem.MaxBatch {
			return usageErrorf("--batch must be between 1 and %d", workitem.MaxBatch)
		}
		makeOp = func(run int, remotes []*rawremote.Remote) loadgen.Op {
			return submitOp(b.prefix, run, b.batch, remotes)
		}
	default:
		if setupOp == nil {
			return usageErrorf("--op must be create, create-json, create-go, get, reserve, lease, acquire, release, submit, batch, claim, complete, hold-reserve, hold-release, task, channel-submit or publish, not %q", b.op)
		}
	}
	if !b.out.json() {
		fmt.Fprintf(a.stdout, "%s of distinct ids via %d node(s), %v per run after %v warmup\n", b.op, len(urls), b.duration, b.warmup)
	}
	var runs []benchRun
	for run, clients := range counts {
		remotes := make([]*rawremote.Remote, clients)
		hc, err := a.httpClient()
		if err != nil {
			return err
		}
		for c := range remotes {
			remotes[c] = rawremote.New(urls[c%len(urls)])
			if hc != nil {
				t := hc.Transport.(*http.Transport).Clone()
				t.MaxIdleConnsPerHost = 256
				remotes[c].WithHTTPClient(&http.Client{Transport: t})
			}
			token, err := a.bearer()
			if err != nil {
				return err
			}
			if token != "" {
				remotes[c].WithToken(token)
			}
		}
		var op loadgen.Op
		if setupOp != nil {
			var note string
			env := benchEnv{prefix: b.prefix, run: run, remotes: remotes, pool: b.pool, span: b.warmup + b.duration}
			if b.pool == 0 && poolOps[b.op] {
				if env.pool, err = calibratePool(setupOp, env); err != nil {
					return fmt.Errorf("--op %s: sizing the pool of the run with %d clients: %w", b.op, clients, err)
				}
			}
			if op, note, err = setupOp(env); err != nil {
				return fmt.Errorf("--op %s: the setup of the run with %d clients: %w", b.op, clients, err)
			}
			if !b.out.json() {
				fmt.Fprintf(a.stdout, "  setup (not measured): %s\n", note)
			}
		} else {
			op = makeOp(run, remotes)
		}
		if b.announce {
			fmt.Fprintf(a.stderr, "bench: measuring %s with %d clients after %v warmup\n", b.op, clients, b.warmup)
		}
		res := loadgen.Run(context.Background(), clients, b.warmup, b.duration, op)
		r := benchRun{Op: b.op, Clients: res.Clients, Ops: res.Ops, Errors: res.Errors, OpsPerSec: res.OpsPerSec(),
			P50Ms: ms(res.P50), P99Ms: ms(res.P99), P999Ms: ms(res.P999), ClientCPUUs: res.ClientCPUPerOp().Microseconds()}
		if res.FirstErr != nil {
			r.FirstErr = errorText(res.FirstErr)
		}
		if !b.out.json() {
			fmt.Fprintln(a.stdout, res)
			if line := res.ClientCPULine(); line != "" {
				fmt.Fprintln(a.stdout, line)
			}
			if res.FirstErr != nil {
				fmt.Fprintf(a.stdout, "  first error: %s\n", errorText(res.FirstErr))
			}
		}
		if b.verify {
			v := verifyCreates(b.prefix, run, remotes, res)
			r.Verified, r.Missing = &v.Checked, &v.Missing
			if !b.out.json() {
				fmt.Fprintf(a.stdout, "  %v\n", v)
			}
		}
		if afterRun != nil {
			afterRun()
			afterRun = nil
		}
		runs = append(runs, r)
	}
	if b.out.json() {
		if err := writeJSON(a.stdout, runs); err != nil {
			return err
		}
	}
	if err := allFailed(runs); err != nil {
		return err
	}
	return anyMissing(runs)
}

// verifyCreates reads back, after a run of create or create-json, every
// node id a call of the run was told it created (loadgen.Verify): the
// same ids the ops make, each from the node its client used.
func verifyCreates(prefix string, run int, remotes []*rawremote.Remote, res loadgen.Result) loadgen.Verification {
	return loadgen.Verify(context.Background(), res, 32, func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		id := benchNodeID(prefix, run, c, seq)
		if _, err := nodes.On(remotes[c]).Get(ctx, id, fsm.Linearizable); err != nil {
			return fmt.Errorf("node %s: %w", id, err)
		}
		return nil
	})
}

// benchNodeID is the node id call seq of client c creates in run run
// (create-json writes the same id straight into its body).
func benchNodeID(prefix string, run, c, seq int) string {
	return fmt.Sprintf("%s-r%d-c%d-%d", prefix, run, c, seq)
}

// anyMissing fails bench when --verify found an acknowledged create
// missing: a figure whose writes were lost is no figure.
func anyMissing(runs []benchRun) error {
	for _, r := range runs {
		if r.Missing != nil && *r.Missing > 0 {
			return fmt.Errorf("the run with %d clients lost acknowledged writes: %d of %d read back missing", r.Clients, *r.Missing, *r.Verified)
		}
	}
	return nil
}

// allFailed is an error when a run completed no operation but failed
// some: a script that runs bench against a wrong address or a cluster
// that is down must not read exit status 0 and a throughput of 0 as a
// measurement. A run with some errors among its operations (a leader
// killed mid-run) is a measurement, and its errors are in the output.
func allFailed(runs []benchRun) error {
	for _, r := range runs {
		if r.Ops == 0 && r.Errors > 0 {
			return fmt.Errorf("every operation failed in the run with %d clients (%d errors; first: %s)", r.Clients, r.Errors, r.FirstErr)
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// maxBenchValueBytes keeps --value-bytes under the node's property bound
// (nodes.MaxPropertiesBytes) with room for the other field.
const maxBenchValueBytes = 60_000

// createOp creates a new node per call through each client's Remote,
// with a "value" property of valueBytes bytes of JSON when it is not 0
// (BENCHMARKS.md's memory per record uses 256).
func createOp(prefix string, run, valueBytes int, remotes []*rawremote.Remote) loadgen.Op {
	var value string
	if valueBytes > 0 {
		value = strings.Repeat("v", valueBytes-2) // plus its two quotes
	}
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		props := map[string]any{"owner": c}
		if valueBytes > 0 {
			props["value"] = value
		}
		out, err := nodes.On(remotes[c]).CreateIfAbsent(ctx, nodes.CreateRequest{
			NodeID: benchNodeID(prefix, run, c, seq), Labels: []string{"bench"},
			Properties: props,
		})
		if err == nil && !out.Created {
			err = fmt.Errorf("id was not new")
		}
		return err
	}
}

// getOp reads one node per call, linearizably, through each client's
// Remote: the read path (leadership confirmed by a quorum, shared by
// concurrent reads) without a write. The node is created first.
func getOp(prefix string, run int, remotes []*rawremote.Remote) loadgen.Op {
	id := fmt.Sprintf("%s-r%d-read", prefix, run)
	_, setupErr := nodes.On(remotes[0]).CreateIfAbsent(context.Background(), nodes.CreateRequest{NodeID: id, Properties: map[string]any{"owner": "bench"}})
	return func(ctx context.Context, c, _ int) error {
		if setupErr != nil {
			return setupErr
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := nodes.On(remotes[c]).Get(ctx, id, fsm.Linearizable)
		return err
	}
}

// reserveOp reserves a new concept id per call with the authority
// adapter over each client's Remote. Ids are BENCH-<n>, numbered apart
// per invocation and client; the cluster's replicated policy set must
// cover them, so the op adds benchPolicy to it first if it lacks it (an
// admin's change, like every write of the bench's raw node calls).
func reserveOp(run int, remotes []*rawremote.Remote) loadgen.Op {
	nonce := uint64(time.Now().UnixNano()/int64(time.Millisecond)) % 100_000
	policies, _ := authority.NewPolicySet([]authority.ConceptNamespacePolicy{benchPolicy})
	setupErr := ensureBenchPolicy(remotes[0])
	services := perClient(remotes, func(r *rawremote.Remote) *authority.Service { return authority.NewService(r, r, policies) })
	return func(ctx context.Context, c, seq int) error {
		if setupErr != nil {
			return setupErr
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		svc := services[c]
		number := nonce*10_000_000_000_000 + uint64(run%10)*1_000_000_000_000 + uint64(c)*1_000_000_000 + uint64(seq) + 1
		res, err := svc.Reserve(ctx, authority.ReserveRequest{
			ConceptID: fmt.Sprintf("%s-%d", benchPolicy.Namespace, number), TenantRef: "bench-tenant",
			OwnerRef: fmt.Sprintf("client-%d", c), RequestRef: fmt.Sprintf("req-%d-%d-%d", nonce, c, seq), PurposeDigest: "sha256:bench",
		})
		if err == nil && !res.Created {
			err = fmt.Errorf("concept id was not new")
		}
		return err
	}
}

// benchPolicy covers every id reserveOp makes.
var benchPolicy = authority.ConceptNamespacePolicy{Namespace: "BENCH", Min: 1, Max: 999_999_999_999_999_999, PolicyVersion: "bench"}

// ensureBenchPolicy adds benchPolicy to the cluster's policy set unless
// the set has it. A cluster too old to replicate policies (no
// /v1/concepts/policies) binds them in the service, which holds it.
func ensureBenchPolicy(r *rawremote.Remote) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := authority.NewService(r, r, nil)
	cur, err := svc.Policies(ctx, fsm.Linearizable)
	if e := errs.From(err); e != nil && e.Code == errs.CodeInvalid && strings.HasPrefix(e.Message, "unknown query type") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading concept policies: %w", err)
	}
	if slices.Contains(cur.Policies, benchPolicy) {
		return nil
	}
	if _, err := svc.SetPolicies(ctx, authority.PoliciesRequest{Policies: append(cur.Policies, benchPolicy)}); err != nil {
		return fmt.Errorf("adding the bench's concept policy: %w", err)
	}
	return nil
}

// leaseOp acquires amount 1 on each of cells cells in one command, then
// releases the leases: one acquire-then-release per call. The cells are
// created first with room for every client.
func leaseOp(prefix string, run, cells int, remotes []*rawremote.Remote) loadgen.Op {
	tenant := fmt.Sprintf("%s-r%d", prefix, run)
	svc := capacity.NewService(remotes[0], remotes[0])
	for i := 0; i < cells; i++ {
		_, err := svc.UpdateCell(context.Background(), capacity.UpdateCellRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: tenant,
			Cell: capacity.CellSpec{CellID: fmt.Sprintf("cell-%d", i), Capacities: map[string]uint64{"slot": 1 << 40}}})
		if err != nil {
			return func(context.Context, int, int) error { return fmt.Errorf("creating cells: %w", err) }
		}
	}
	services := perClient(remotes, func(r *rawremote.Remote) *capacity.Service { return capacity.NewService(r, r) })
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		s := services[c]
		demands := make([]capacity.Demand, cells)
		for i := range demands {
			demands[i] = capacity.Demand{CellID: fmt.Sprintf("cell-%d", i), ResourceClass: "slot", Amount: 1}
		}
		owner := fmt.Sprintf("client-%d", c)
		got, err := s.Acquire(ctx, capacity.AcquireRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: tenant,
			WorkItemID: fmt.Sprintf("w-%d-%d", c, seq), OwnerDigest: owner, IdempotencyKey: fmt.Sprintf("k-%d-%d", c, seq),
			Demands: demands, TTLMs: 60_000})
		if err != nil {
			return err
		}
		_, err = s.Release(ctx, capacity.LeasesRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: tenant, OwnerDigest: owner, Leases: got.Refs()})
		return err
	}
}
