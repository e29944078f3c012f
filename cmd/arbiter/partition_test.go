//go:build linux

package main

// Partitions of real processes, Jepsen style (issue 16, item 9): three
// `arbiter serve` processes, each in its own network namespace with its
// own address (internal/netns), TLS between them and bearer tokens for
// the client, while clients create, compare-and-set and read nodes
// through every process and a seeded nemesis cuts links: the leader
// isolated, a follower cut off, a bridge (two nodes cut from each other,
// both still reaching the third), a flapping link, links taken down,
// the clients cut from the leader, and SIGKILLs during a partition. At
// the end the network heals and: porcupine must find the history
// linearizable, every acknowledged write must read back on every
// process, and the three replicas must hash the same at one index.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/chaos"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
	"github.com/arbiterhq/arbiter/internal/netns"
	"github.com/arbiterhq/arbiter/internal/seed"
	"github.com/arbiterhq/arbiter/internal/testcert"
)

const (
	partClients = 4
	partKeys    = 5 // node ids per phase; every client works on all of them
	// partAttempt bounds one call: a call into a cut-off process gets no
	// answer, and the client must move on (its outcome then unknown).
	partAttempt = 2 * time.Second
	// partHold is how long a partition stands: past raft's election
	// timeout (1-2 s), so a cut-off leader is replaced.
	partHold = 3 * time.Second
	// partProgress bounds the wait, after a heal, for acknowledged writes.
	partProgress  = 25 * time.Second
	partMinAcked  = 5
	partCIFaults  = 7
	partCheckTime = 2 * time.Minute // porcupine's budget
)

// TestPartitionsOfRealProcesses is the test described at the top of
// this file. ARBITER_SOAK=<duration> keeps injecting faults that long.
func TestPartitionsOfRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	nw := netns.New(t, 3) // skips, saying why, where namespaces cannot be made
	soak, _, err := chaos.SoakDuration()
	if err != nil {
		t.Fatal(err)
	}
	bound := 4 * time.Minute
	if soak > 0 {
		bound = 2*soak + 4*time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	s := seed.For(t)
	t.Logf("partition seed %d (soak %v)", s, soak)

	pr := &partRun{t: t, nw: nw, rng: rand.New(rand.NewPCG(s, 0)), seed: s, h: lin.NewHistory(), acked: map[string]partAck{}}
	pr.cl = startPartitionCluster(ctx, t, nw)
	pr.run(ctx, pr.plan(soak))

	e2eCompareStateHashes(ctx, t, pr.cl)
	pr.verifyAcknowledged(ctx)
	res := lin.Check(t, lin.NodesModel(), pr.h, partCheckTime)
	t.Logf("partition summary: seed=%d faults=%v ops=%d acked writes=%d unknown=%d dropped=%d porcupine=%v",
		s, pr.injected, pr.ops.Load(), pr.writes.Load(), pr.unknown.Load(), pr.dropped.Load(), res)
}

// run injects the faults plan gives while the clients run, then heals.
func (pr *partRun) run(ctx context.Context, plan func(i int) (partFault, bool)) {
	stopClients := pr.startClients(ctx)
	for i := 0; ; i++ {
		f, ok := plan(i)
		if !ok {
			break
		}
		pr.phase.Add(1)
		pr.inject(ctx, f)
		pr.waitProgress(ctx, "after "+f.name)
	}
	stopClients()
	pr.nw.HealAll()
}

// TestPartitionHarnessCatchesStaleReads is the control: the same run with
// reads served locally (consistency=stale) while a follower, then the
// leader, is cut off must give a history porcupine rejects. Each phase
// starts new keys, so a cut-off process answers not_found for a key the
// others have since created. The random clients meet such a read only by
// chance (a slow CI run once made too few calls to meet one), so while
// each cut stands a probe also creates a fresh key through the majority
// and then reads it from the process that is cut off.
func TestPartitionHarnessCatchesStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	nw := netns.New(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := seed.For(t)
	pr := &partRun{t: t, nw: nw, rng: rand.New(rand.NewPCG(s, 0)), seed: s, h: lin.NewHistory(), acked: map[string]partAck{}, staleReads: true}
	pr.cl = startPartitionCluster(ctx, t, nw)
	faults := []partFault{
		{"cut-follower", func(pr *partRun, ctx context.Context, l, f int) { pr.nw.Isolate(f); pr.probeStale(ctx, f, l) }},
		{"isolate-leader", func(pr *partRun, ctx context.Context, l, _ int) { pr.nw.Isolate(l); pr.probeStale(ctx, l, (l+1)%3) }},
	}
	pr.run(ctx, func(i int) (partFault, bool) {
		if i < len(faults) {
			return faults[i], true
		}
		return partFault{}, false
	})
	ops := pr.h.Operations()
	if res, _ := porcupine.CheckOperationsVerbose(lin.NodesModel(), ops, time.Minute); res != porcupine.Illegal {
		t.Errorf("stale reads under partitions: porcupine says %v of %d operations, want Illegal: the harness cannot see a stale read", res, len(ops))
	}
}

// probeStale stands for partHold, creating a fresh key through process
// via and, once that is acknowledged, reading it from process cut, each
// call recorded in the history as one more client's.
func (pr *partRun) probeStale(ctx context.Context, cut, via int) {
	end := time.Now().Add(partHold)
	for k := 0; time.Now().Before(end); k++ {
		id := fmt.Sprintf("probe-p%d-%d", pr.phase.Load(), k)
		if _, ok := pr.call(ctx, partClients, pr.cl.nodes[via], lin.NodeInput{Kind: lin.NodeCreate, ID: id, Owner: "probe", Fence: 1}); ok {
			pr.call(ctx, partClients, pr.cl.nodes[cut], lin.NodeInput{Kind: lin.NodeGet, ID: id})
		}
		time.Sleep(partHold / 10)
	}
}

// partFault is one thing the nemesis does to the network (and perhaps a
// process), given the current leader and a follower.
type partFault struct {
	name string
	do   func(pr *partRun, ctx context.Context, leader, follower int)
}

var partFaults = []partFault{
	{"isolate-leader", func(pr *partRun, _ context.Context, l, _ int) { pr.nw.Isolate(l); pr.hold() }},
	{"cut-follower", func(pr *partRun, _ context.Context, _, f int) { pr.nw.Isolate(f); pr.hold() }},
	{"bridge", func(pr *partRun, _ context.Context, l, f int) { pr.nw.Cut(l, f); pr.hold() }},
	{"flap", func(pr *partRun, _ context.Context, l, f int) {
		for k := 0; k < 12; k++ {
			if k%2 == 0 {
				pr.nw.Cut(l, f)
			} else {
				pr.nw.Heal(l, f)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}},
	{"link-down-leader", func(pr *partRun, _ context.Context, l, _ int) {
		for j := range 3 {
			if j != l {
				pr.nw.LinkDown(l, j)
			}
		}
		pr.hold()
	}},
	{"clients-cut-from-leader", func(pr *partRun, _ context.Context, l, _ int) { pr.nw.Cut(netns.Client, l); pr.hold() }},
	{"kill-isolated-leader", func(pr *partRun, ctx context.Context, l, _ int) {
		pr.nw.Isolate(l)
		time.Sleep(partHold / 2)
		pr.kill(l)
		time.Sleep(partHold / 2)
		pr.nw.HealAll()
		pr.restart(ctx, l)
	}},
	{"kill-follower-in-bridge", func(pr *partRun, ctx context.Context, l, f int) {
		pr.nw.Cut(l, f)
		time.Sleep(partHold / 2)
		pr.kill(f)
		time.Sleep(partHold / 2)
		pr.nw.HealAll()
		pr.restart(ctx, f)
	}},
}

// partRun is one run: the cluster, the network, the history.
type partRun struct {
	t    *testing.T
	nw   *netns.Net
	cl   *e2eCluster
	rng  *rand.Rand // the nemesis's; clients have their own
	seed uint64
	h    *lin.History
	// staleReads makes gets local reads (the control): linearizable
	// otherwise.
	staleReads bool

	phase                         atomic.Int64 // keys are per phase
	ops, writes, unknown, dropped atomic.Int64
	mu                            sync.Mutex
	acked                         map[string]partAck // node id -> latest acknowledged version
	injected                      []string
}

// partAck is an acknowledged write of a node: its version then.
type partAck struct{ version uint64 }

// startPartitionCluster starts n1 (bootstrapping) and n2, n3 (joining)
// in the namespaces of nw, with TLS between them and a token for the
// clients, whose connections leave from the client namespace.
func startPartitionCluster(ctx context.Context, t *testing.T, nw *netns.Net) *e2eCluster {
	t.Helper()
	root := t.TempDir()
	ca := testcert.NewCA(t, "partition-test-ca")
	caPath := filepath.Join(root, "ca.pem")
	if err := os.WriteFile(caPath, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "partition-test-token-0123456789"
	principals, _ := json.Marshal([]identity.PrincipalConfig{{ID: "tester", Tenants: []string{"*"}, Roles: []string{"admin"},
		TokenSHA256: []string{identity.HashToken(token)}}})
	principalsPath := filepath.Join(root, "principals.json")
	if err := os.WriteFile(principalsPath, principals, 0o600); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{
		DialContext:         nw.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 16,
	}}
	cl := &e2eCluster{t: t, bin: e2eBuildArbiter(t), root: root, c: &e2eAPIClient{hc: hc, token: token}}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		certPath, keyPath := testcert.WriteFiles(t, root, id, ca.Issue(t, id, net.ParseIP(nw.Addr(i))))
		n := &e2eNode{
			id:       id,
			httpAddr: nw.Addr(i) + ":8000",
			dataDir:  filepath.Join(root, id, "data"),
			logDir:   filepath.Join(root, id),
			scheme:   "https",
			command: func(bin string, args []string) *exec.Cmd {
				return nw.Cmd(i, bin, args...)
			},
		}
		if err := os.MkdirAll(n.logDir, 0o755); err != nil {
			t.Fatal(err)
		}
		n.args = []string{"--id", id, "--data-dir", n.dataDir, "--raft-addr", nw.Addr(i) + ":7000", "--http-addr", n.httpAddr,
			"--principals", principalsPath, "--tls-cert", certPath, "--tls-key", keyPath, "--tls-peer-ca", caPath}
		n.args = append(n.args, crashServeArgs...) // frequent snapshots: a node cut off catches up by an install
		if i == 0 {
			n.args = append(n.args, "--bootstrap")
		} else {
			n.args = append(n.args, "--join", "https://"+nw.Addr(0)+":8000")
		}
		cl.nodes = append(cl.nodes, n)
	}
	t.Cleanup(cl.dumpLogsOnFailure)
	t.Cleanup(cl.stopAll)
	t.Cleanup(hc.CloseIdleConnections)
	start := time.Now()
	for _, n := range cl.nodes {
		n.start(t, cl.bin)
	}
	for _, n := range cl.nodes {
		cl.waitReady(ctx, n, 30*time.Second)
	}
	cl.eventually(ctx, 20*time.Second, "three voters seen by every node", func() (bool, string) {
		for _, n := range cl.nodes {
			st, err := cl.c.status(ctx, n)
			if err != nil {
				return false, err.Error()
			}
			if st.LeaderID == "" || st.voters() != 3 {
				return false, fmt.Sprintf("%s: %+v", n.id, st)
			}
		}
		return true, ""
	})
	t.Logf("3 processes in 3 namespaces ready in %v", time.Since(start).Round(time.Millisecond))
	return cl
}

// plan returns the i-th fault: each kind once in a seeded order for CI,
// then, in a soak, kinds drawn at random until the soak is over.
func (pr *partRun) plan(soak time.Duration) func(i int) (partFault, bool) {
	order := pr.rng.Perm(len(partFaults))
	end := time.Now().Add(soak)
	return func(i int) (partFault, bool) {
		if i < min(partCIFaults, len(order)) {
			return partFaults[order[i]], true
		}
		if soak > 0 && time.Now().Before(end) {
			return partFaults[pr.rng.IntN(len(partFaults))], true
		}
		return partFault{}, false
	}
}

func (pr *partRun) hold() { time.Sleep(partHold) }

// inject runs f against the current leader and a follower, then heals
// the network (and restarts whatever f left down).
func (pr *partRun) inject(ctx context.Context, f partFault) {
	lead, _ := pr.cl.leader(ctx, nil)
	l := pr.index(lead)
	fo := (l + 1 + pr.rng.IntN(2)) % 3
	pr.mu.Lock()
	pr.injected = append(pr.injected, f.name)
	pr.mu.Unlock()
	began := time.Now()
	pr.t.Logf("fault %s (leader n%d, follower n%d)", f.name, l+1, fo+1)
	f.do(pr, ctx, l, fo)
	pr.t.Logf("fault %s healed after %v (standing at the end: %s)", f.name, time.Since(began).Round(time.Millisecond), pr.nw.Faults())
	pr.nw.HealAll()
	for i, n := range pr.cl.nodes {
		if !n.running() {
			pr.restart(ctx, i)
		}
	}
}

func (pr *partRun) index(n *e2eNode) int {
	for i, m := range pr.cl.nodes {
		if m == n {
			return i
		}
	}
	pr.t.Fatalf("%s is not a member", n.id)
	return -1
}

func (pr *partRun) kill(i int) {
	n := pr.cl.nodes[i]
	n.signal(pr.t, syscall.SIGKILL)
	if n.waitExit(10*time.Second) == nil {
		pr.t.Fatalf("%s survived SIGKILL", n.id)
	}
}

func (pr *partRun) restart(ctx context.Context, i int) {
	n := pr.cl.nodes[i]
	n.start(pr.t, pr.cl.bin)
	pr.cl.waitReady(ctx, n, 30*time.Second)
}

// waitProgress waits for partMinAcked writes acknowledged from now on.
func (pr *partRun) waitProgress(ctx context.Context, when string) {
	base := pr.writes.Load()
	pr.cl.eventually(ctx, partProgress, fmt.Sprintf("%d acknowledged writes %s", partMinAcked, when), func() (bool, string) {
		got := pr.writes.Load() - base
		return got >= partMinAcked, fmt.Sprintf("%d so far", got)
	})
}

// startClients runs partClients clients until the returned stop.
func (pr *partRun) startClients(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for c := range partClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.client(ctx, c)
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// client calls create, cas and get on the current phase's keys through
// a random process each time, remembering the last fence it saw per key
// so that its compare-and-sets mostly could succeed.
func (pr *partRun) client(ctx context.Context, c int) {
	rng := rand.New(rand.NewPCG(pr.seed, uint64(c)+1))
	fences := map[string]uint64{}
	for ctx.Err() == nil {
		id := fmt.Sprintf("p%d-k%d", pr.phase.Load(), rng.IntN(partKeys))
		n := pr.cl.nodes[rng.IntN(len(pr.cl.nodes))]
		owner := fmt.Sprintf("c%d", c)
		var in lin.NodeInput
		switch k := rng.IntN(10); {
		case k < 3:
			in = lin.NodeInput{Kind: lin.NodeCreate, ID: id, Owner: owner, Fence: 1}
		case k < 7:
			in = lin.NodeInput{Kind: lin.NodeCAS, ID: id, Owner: owner, Expect: fences[id], Fence: fences[id] + 1}
		default:
			in = lin.NodeInput{Kind: lin.NodeGet, ID: id}
		}
		if out, ok := pr.call(ctx, c, n, in); ok && !out.NotFound {
			fences[id] = out.Fence
		}
	}
}

// call makes one call and records it; ok is false unless it was decided.
func (pr *partRun) call(ctx context.Context, c int, n *e2eNode, in lin.NodeInput) (lin.NodeOutput, bool) {
	pr.ops.Add(1)
	actx, cancel := context.WithTimeout(ctx, partAttempt)
	defer cancel()
	op := pr.h.Call(c, in)
	var out lin.NodeOutput
	var err error
	switch in.Kind {
	case lin.NodeCreate:
		var res e2eCreateReply
		err = pr.cl.c.call(actx, http.MethodPost, n.url()+"/v1/nodes/create",
			e2eCreateReq{NodeID: in.ID, Properties: map[string]any{"owner": in.Owner, "fence": in.Fence}}, &res)
		out = partOutput(res.Node)
		out.Created = res.Created
	case lin.NodeCAS:
		var res e2eCASReply
		err = pr.cl.c.call(actx, http.MethodPost, n.url()+"/v1/nodes/cas", e2eCASReq{NodeID: in.ID,
			Conditions: map[string]any{"fence": in.Expect}, Updates: map[string]any{"fence": in.Fence, "owner": in.Owner}}, &res)
		out = partOutput(res.Node)
		out.Swapped = res.Swapped
	case lin.NodeGet:
		var res e2eNodeReply
		u := n.url() + "/v1/nodes/get?node_id=" + url.QueryEscape(in.ID)
		if pr.staleReads {
			u += "&consistency=stale"
		}
		err = pr.cl.c.call(actx, http.MethodGet, u, nil, &res)
		out = partOutput(res)
	}
	write := in.Kind != lin.NodeGet
	var apiErr *e2eAPIError
	switch {
	case err == nil:
		op.Return(out)
		if write {
			pr.writes.Add(1)
			pr.ack(in.ID, out.Version)
		}
		return out, true
	case errors.As(err, &apiErr) && apiErr.Code == "not_found" && in.Kind != lin.NodeCreate:
		op.Return(lin.NodeOutput{NotFound: true})
		return lin.NodeOutput{NotFound: true}, true
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable && !apiErr.OutcomeUnknown:
		// The cluster promises such a write never reached the log: it is
		// left out, and the check would catch an effect nobody wrote.
		op.Drop()
		pr.dropped.Add(1)
	case errors.As(err, &apiErr) && apiErr.Status != http.StatusServiceUnavailable:
		pr.t.Errorf("%s %+v through %s: %v (only 503 and no answer are expected)", in.Kind, in, n.id, err)
		op.Unknown()
	case !write:
		op.Drop()
		pr.dropped.Add(1)
	default: // no answer, or an outcome the cluster says it does not know
		op.Unknown()
		pr.unknown.Add(1)
	}
	return lin.NodeOutput{}, false
}

// partOutput is the model's view of a node as the API returned it.
func partOutput(n e2eNodeReply) lin.NodeOutput {
	var owner string
	_ = json.Unmarshal(n.Properties["owner"], &owner)
	fence, _ := strconv.ParseUint(string(n.Properties["fence"]), 10, 64)
	return lin.NodeOutput{Owner: owner, Fence: fence, Version: n.Version}
}

func (pr *partRun) ack(id string, version uint64) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if version > pr.acked[id].version {
		pr.acked[id] = partAck{version: version}
	}
}

// verifyAcknowledged reads every acknowledged node on every process,
// locally (a stale read): each must hold at least the version last
// acknowledged.
func (pr *partRun) verifyAcknowledged(ctx context.Context) {
	pr.mu.Lock()
	acked := make(map[string]partAck, len(pr.acked))
	for id, a := range pr.acked {
		acked[id] = a
	}
	pr.mu.Unlock()
	if len(acked) == 0 {
		pr.t.Fatal("no write was acknowledged")
	}
	for _, n := range pr.cl.nodes {
		for id, a := range acked {
			got, err := pr.cl.c.get(ctx, n, id, true)
			switch {
			case err != nil:
				pr.t.Errorf("acknowledged %s (version %d) on %s: %v", id, a.version, n.id, err)
			case got.Version < a.version:
				pr.t.Errorf("acknowledged %s at version %d; %s holds version %d", id, a.version, n.id, got.Version)
			}
		}
	}
	pr.t.Logf("%d acknowledged nodes read back on each of 3 processes", len(acked))
}
