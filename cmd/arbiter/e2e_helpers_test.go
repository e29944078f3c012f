//go:build unix

package main

// Helpers of the multi-process tests: build the arbiter binary, run real
// `arbiter serve` processes on loopback, and talk to them with a plain
// net/http JSON client that shares no code with the cluster package, so the
// wire format is tested as an outsider sees it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	e2eNodes       = 3
	e2eCallTimeout = 5 * time.Second  // one HTTP call
	e2eExitTimeout = 20 * time.Second // SIGTERM to exit; serve's own bound is 15s
	e2eLogTail     = 40               // lines of each node log dumped on failure
)

// e2eBuildArbiter compiles this package into a fresh temporary directory and
// returns the binary's path. The binary is built WITHOUT -race even when
// the test binary has it: three race-instrumented nodes on two cores would
// run several times slower and distort raft's timing, while the race
// detector still covers this test's own concurrent client code (and the
// cluster package's in-process tests cover the node under -race).
func e2eBuildArbiter(t *testing.T) string {
	t.Helper()
	start := time.Now()
	bin := filepath.Join(t.TempDir(), "arbiter")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		p, lerr := exec.LookPath("go")
		if lerr != nil {
			t.Fatalf("no go tool at %s (%v) nor on PATH (%v)", gobin, err, lerr)
		}
		gobin = p
	}
	// Bounded: with a warm build cache this only links (a second or two).
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// e2eFreePorts returns n distinct free loopback ports. They are closed before
// use, so another process could take one first; the tiny race is accepted.
func e2eFreePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		defer ln.Close() // held until all are picked, so they are distinct
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// e2eNode is one node's fixed identity and flags, and its current process.
// Only the test goroutine starts and stops processes.
type e2eNode struct {
	id       string
	httpAddr string
	dataDir  string
	args     []string
	logDir   string
	logs     []string // one log file per process started
	proc     *e2eProc
	// scheme is "https" for a node serving TLS ("" is http); command, if
	// set, makes the process (to run it inside a network namespace).
	scheme  string
	command func(bin string, args []string) *exec.Cmd
}

// e2eProc is one `arbiter serve` process.
type e2eProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait returned
	err  error         // Wait's error; read only after done
}

func (n *e2eNode) url() string {
	if n.scheme != "" {
		return n.scheme + "://" + n.httpAddr
	}
	return "http://" + n.httpAddr
}

// start runs a new `arbiter serve` process with the node's flags, its
// output appended to a new log file.
func (n *e2eNode) start(t *testing.T, bin string) {
	t.Helper()
	if n.running() {
		t.Fatalf("%s: already running", n.id)
	}
	path := filepath.Join(n.logDir, fmt.Sprintf("%s.%d.log", n.id, len(n.logs)))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve"}, n.args...)
	cmd := exec.Command(bin, args...)
	if n.command != nil {
		cmd = n.command(bin, args)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("%s: start: %v", n.id, err)
	}
	n.logs = append(n.logs, path)
	p := &e2eProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	n.proc = p
}

func (n *e2eNode) running() bool {
	if n.proc == nil {
		return false
	}
	select {
	case <-n.proc.done:
		return false
	default:
		return true
	}
}

func (n *e2eNode) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := n.proc.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", n.id, sig, err)
	}
}

// waitExit waits up to d for the current process to exit and returns its
// state, or nil if it is still running.
func (n *e2eNode) waitExit(d time.Duration) *os.ProcessState {
	select {
	case <-n.proc.done:
		return n.proc.cmd.ProcessState
	case <-time.After(d):
		return nil
	}
}

// currentLog is the text of the current process's log.
func (n *e2eNode) currentLog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(n.logs[len(n.logs)-1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// e2eCluster is three `arbiter serve` processes and a client, and any
// extra processes a test starts (extraNode).
type e2eCluster struct {
	t     *testing.T
	bin   string
	root  string
	nodes []*e2eNode
	extra []*e2eNode
	c     *e2eAPIClient
}

// all is every node, the cluster's and the extra ones.
func (cl *e2eCluster) all() []*e2eNode { return append(append([]*e2eNode{}, cl.nodes...), cl.extra...) }

// extraNode is a node outside the three, on fresh ports and a data
// directory of its own, with serve flags args after its id, data
// directory and addresses. Cleanup stops it like the others.
func (cl *e2eCluster) extraNode(id string, args ...string) *e2eNode {
	cl.t.Helper()
	ports := e2eFreePorts(cl.t, 2)
	n := &e2eNode{
		id:       id,
		httpAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		dataDir:  filepath.Join(cl.root, id, "data"),
		logDir:   filepath.Join(cl.root, id),
	}
	if err := os.MkdirAll(n.logDir, 0o755); err != nil {
		cl.t.Fatal(err)
	}
	n.args = append([]string{"--id", id, "--data-dir", n.dataDir,
		"--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--http-addr", n.httpAddr}, args...)
	cl.extra = append(cl.extra, n)
	return n
}

// flag is the value of flag name in n's arguments ("" if absent).
func (n *e2eNode) flag(name string) string {
	for i := 0; i+1 < len(n.args); i++ {
		if n.args[i] == name {
			return n.args[i+1]
		}
	}
	return ""
}

// setFlag sets flag name to value in n's arguments (adding it if absent);
// setting --http-addr moves n's API address too.
func (n *e2eNode) setFlag(name, value string) {
	if name == "--http-addr" {
		n.httpAddr = value
	}
	for i := 0; i+1 < len(n.args); i++ {
		if n.args[i] == name {
			n.args[i+1] = value
			return
		}
	}
	n.args = append(n.args, name, value)
}

// dropFlag removes flag name (and its value, unless boolean) from n's
// arguments.
func (n *e2eNode) dropFlag(name string, boolean bool) {
	for i := 0; i < len(n.args); i++ {
		if n.args[i] != name {
			continue
		}
		end := i + 2
		if boolean {
			end = i + 1
		}
		n.args = append(n.args[:i], n.args[min(end, len(n.args)):]...)
		return
	}
}

// expectRefused starts n, which must exit non-zero within d without
// serving, its log saying each of wants; it returns the log.
func (cl *e2eCluster) expectRefused(n *e2eNode, d time.Duration, wants ...string) string {
	cl.t.Helper()
	n.start(cl.t, cl.bin)
	st := n.waitExit(d)
	if st == nil {
		_ = n.proc.cmd.Process.Kill()
		n.waitExit(5 * time.Second)
		cl.t.Fatalf("%s %v: still running %v after start, want it refused; its log:\n%s", n.id, n.args, d, n.currentLog(cl.t))
	}
	log := n.currentLog(cl.t)
	if st.Success() {
		cl.t.Fatalf("%s %v: exited 0, want a refusal; its log:\n%s", n.id, n.args, log)
	}
	for _, w := range wants {
		if !strings.Contains(log, w) {
			cl.t.Errorf("%s %v: refused, but its message lacks %q:\n%s", n.id, n.args, w, log)
		}
	}
	return log
}

// startE2ECluster builds the binary and starts n1 (bootstrapping) and n2,
// n3 (joining through n1), then waits until every node is ready and sees
// three voters (a node joins as a non-voter; the leader promotes it once
// it has caught up). extraArgs are appended to every node's serve flags,
// with "{node}" replaced by the node's id (n1, n2, n3).
// Cleanup SIGTERMs every process still running and, if the test failed,
// logs the tail of every node's logs.
func startE2ECluster(ctx context.Context, t *testing.T, extraArgs ...string) *e2eCluster {
	t.Helper()
	cl := &e2eCluster{t: t, bin: e2eBuildArbiter(t), c: newE2EAPIClient()}
	root := t.TempDir()
	cl.root = root
	ports := e2eFreePorts(t, 2*e2eNodes)
	for i := range e2eNodes {
		n := &e2eNode{
			id:       fmt.Sprintf("n%d", i+1),
			httpAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
			dataDir:  filepath.Join(root, fmt.Sprintf("n%d", i+1), "data"),
			logDir:   filepath.Join(root, fmt.Sprintf("n%d", i+1)),
		}
		if err := os.MkdirAll(n.logDir, 0o755); err != nil {
			t.Fatal(err)
		}
		n.args = []string{
			"--id", n.id, "--data-dir", n.dataDir,
			"--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			"--http-addr", n.httpAddr,
		}
		if i == 0 {
			n.args = append(n.args, "--bootstrap")
		} else {
			n.args = append(n.args, "--join", cl.nodes[0].url())
		}
		for _, a := range extraArgs {
			n.args = append(n.args, strings.ReplaceAll(a, "{node}", n.id))
		}
		cl.nodes = append(cl.nodes, n)
	}
	// Cleanups run last-in first-out: stop the processes, then dump logs,
	// then (registered by t.TempDir earlier) remove the directories.
	t.Cleanup(cl.dumpLogsOnFailure)
	t.Cleanup(cl.stopAll)
	t.Cleanup(cl.c.hc.CloseIdleConnections)

	start := time.Now()
	for _, n := range cl.nodes { // joiners retry until n1 answers
		n.start(t, cl.bin)
	}
	for _, n := range cl.nodes {
		cl.waitReady(ctx, n, 20*time.Second)
	}
	cl.eventually(ctx, 10*time.Second, "three voters seen by every node", func() (bool, string) {
		for _, n := range cl.nodes {
			st, err := cl.c.status(ctx, n)
			if err != nil {
				return false, err.Error()
			}
			if len(st.Members) != e2eNodes || st.LeaderID == "" || st.voters() != e2eNodes {
				return false, fmt.Sprintf("%s: %+v", n.id, st)
			}
		}
		return true, ""
	})
	t.Logf("3-node cluster ready in %v", time.Since(start).Round(time.Millisecond))
	return cl
}

// waitReady polls n's /readyz until 200, failing early if the process
// exits.
func (cl *e2eCluster) waitReady(ctx context.Context, n *e2eNode, d time.Duration) {
	cl.t.Helper()
	cl.eventually(ctx, d, n.id+" /readyz", func() (bool, string) {
		if !n.running() {
			cl.t.Fatalf("%s exited before it was ready: %v", n.id, n.proc.err)
		}
		err := cl.c.call(ctx, http.MethodGet, n.url()+"/readyz", nil, nil)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// leader asks the running nodes who leads until they agree on a running
// node, and returns it with the term.
func (cl *e2eCluster) leader(ctx context.Context, except *e2eNode) (*e2eNode, uint64) {
	cl.t.Helper()
	var lead *e2eNode
	var term uint64
	cl.eventually(ctx, 15*time.Second, "an agreed leader", func() (bool, string) {
		lead, term = nil, 0
		agreed := ""
		for _, n := range cl.nodes {
			if n == except || !n.running() {
				continue
			}
			st, err := cl.c.status(ctx, n)
			if err != nil {
				return false, err.Error()
			}
			if st.LeaderID == "" || (except != nil && st.LeaderID == except.id) || (agreed != "" && st.LeaderID != agreed) {
				return false, fmt.Sprintf("%s sees leader %q in term %d", n.id, st.LeaderID, st.Term)
			}
			agreed = st.LeaderID
			if st.NodeID == st.LeaderID {
				if st.State != "Leader" {
					return false, fmt.Sprintf("%s is named leader but is %s", n.id, st.State)
				}
				lead, term = n, st.Term
			}
		}
		if lead == nil {
			return false, fmt.Sprintf("leader %q is not a running node", agreed)
		}
		return true, ""
	})
	return lead, term
}

func (cl *e2eCluster) others(n *e2eNode) []*e2eNode {
	var out []*e2eNode
	for _, m := range cl.nodes {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// checkResumed checks that restarted n resumed its membership from its
// data directory rather than bootstrapping a new cluster. The API serves
// (and /readyz can pass) a moment before "node started" is logged, so the
// log line is waited for.
func (cl *e2eCluster) checkResumed(ctx context.Context, t *testing.T, n *e2eNode) {
	t.Helper()
	var log string
	cl.eventually(ctx, 10*time.Second, n.id+` logs "node started"`, func() (bool, string) {
		log = n.currentLog(t)
		return strings.Contains(log, `msg="node started"`), "not yet"
	})
	if !strings.Contains(log, "existing_state=true") || strings.Contains(log, "bootstrapped a new cluster") {
		t.Fatalf("%s did not resume on its data dir; its log:\n%s", n.id, log)
	}
}

// eventually polls f every 25ms until it holds, failing the test with f's
// last explanation after d (or when ctx ends).
func (cl *e2eCluster) eventually(ctx context.Context, d time.Duration, what string, f func() (bool, string)) {
	cl.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := f()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			cl.t.Fatalf("%s: not within %v: %s", what, d, why)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stopAll SIGTERMs every running process and waits for them to exit. A
// process that does not exit in time, or exits non-zero, fails the test.
func (cl *e2eCluster) stopAll() {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	for _, n := range cl.all() {
		if !n.running() {
			continue
		}
		_ = n.proc.cmd.Process.Signal(syscall.SIGTERM)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			st := n.waitExit(e2eExitTimeout)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case st == nil:
				problems = append(problems, fmt.Sprintf("%s did not exit within %v of SIGTERM; killed", n.id, e2eExitTimeout))
				_ = n.proc.cmd.Process.Kill()
				n.waitExit(5 * time.Second)
			case !st.Success():
				problems = append(problems, fmt.Sprintf("%s exited after SIGTERM with %v: %v", n.id, st, n.proc.err))
			default:
				cl.t.Logf("%s exited 0 %v after SIGTERM", n.id, time.Since(start).Round(time.Millisecond))
			}
		}()
	}
	wg.Wait()
	for _, p := range problems {
		cl.t.Error(p)
	}
}

func (cl *e2eCluster) dumpLogsOnFailure() {
	if !cl.t.Failed() {
		return
	}
	for _, n := range cl.all() {
		for _, path := range n.logs {
			b, err := os.ReadFile(path)
			if err != nil {
				cl.t.Logf("%s: %v", path, err)
				continue
			}
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			if len(lines) > e2eLogTail {
				lines = lines[len(lines)-e2eLogTail:]
			}
			cl.t.Logf("---- last %d lines of %s ----\n%s", len(lines), filepath.Base(path), strings.Join(lines, "\n"))
		}
	}
}

// The wire types, declared here rather than imported from the cluster
// package.

type e2eCreateReq struct {
	NodeID         string         `json:"node_id"`
	Labels         []string       `json:"labels"`
	Properties     map[string]any `json:"properties"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
}

type e2eCASReq struct {
	NodeID         string         `json:"node_id"`
	Conditions     map[string]any `json:"conditions"`
	Updates        map[string]any `json:"updates"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
}

type e2eNodeReply struct {
	NodeID     string                     `json:"node_id"`
	Labels     []string                   `json:"labels"`
	Properties map[string]json.RawMessage `json:"properties"`
	Version    uint64                     `json:"version"`
}

type e2eCreateReply struct {
	Created  bool         `json:"created"`
	Node     e2eNodeReply `json:"node"`
	Replayed bool         `json:"replayed"`
}

type e2eCASReply struct {
	Swapped  bool         `json:"swapped"`
	Node     e2eNodeReply `json:"node"`
	Replayed bool         `json:"replayed"`
}

type e2eStatusReply struct {
	NodeID        string      `json:"node_id"`
	ClusterID     string      `json:"cluster_id"`
	State         string      `json:"state"`
	LeaderID      string      `json:"leader_id"`
	LeaderAPIAddr string      `json:"leader_api_addr"`
	Term          uint64      `json:"term"`
	CommitIndex   uint64      `json:"commit_index"`
	AppliedIndex  uint64      `json:"applied_index"`
	Members       []e2eMember `json:"members"`
}

type e2eMember struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
	Voter    bool   `json:"voter"`
}

func (st *e2eStatusReply) voters() int {
	n := 0
	for _, m := range st.Members {
		if m.Voter {
			n++
		}
	}
	return n
}

// member is the member named id, or nil.
func (st *e2eStatusReply) member(id string) *e2eMember {
	for i := range st.Members {
		if st.Members[i].ID == id {
			return &st.Members[i]
		}
	}
	return nil
}

type e2eHashReply struct {
	Index  uint64            `json:"index"`
	Hash   string            `json:"hash"`
	Tables map[string]string `json:"tables"`
}

// differingTables names the tables whose hashes differ between a and b
// (a table present on one side only differs too), sorted.
func differingTables(a, b *e2eHashReply) []string {
	var diff []string
	for name, h := range a.Tables {
		if b.Tables[name] != h {
			diff = append(diff, name)
		}
	}
	for name := range b.Tables {
		if _, ok := a.Tables[name]; !ok {
			diff = append(diff, name)
		}
	}
	slices.Sort(diff)
	return diff
}

// e2eAPIError is a non-200 reply.
type e2eAPIError struct {
	Status         int
	Code           string `json:"code"`
	Message        string `json:"message"`
	OutcomeUnknown bool   `json:"outcome_unknown"`
}

func (e *e2eAPIError) Error() string {
	s := fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Message)
	if e.OutcomeUnknown {
		s += " (outcome unknown)"
	}
	return s
}

// e2eAPIClient is a plain JSON client of the HTTP API; with a token, it
// sends it as a bearer token.
type e2eAPIClient struct {
	hc    *http.Client
	token string
}

func newE2EAPIClient() *e2eAPIClient {
	return &e2eAPIClient{hc: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 32,
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
	}}}
}

// call sends in (if not nil) as JSON and decodes a 200 reply into out (if
// not nil). A non-200 reply is an *e2eAPIError; anything else is a transport
// failure.
func (c *e2eAPIClient) call(ctx context.Context, method, u string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, e2eCallTimeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var env struct {
			Error *e2eAPIError `json:"error"`
		}
		if json.Unmarshal(raw, &env) != nil || env.Error == nil {
			return &e2eAPIError{Status: resp.StatusCode, Message: string(raw)}
		}
		env.Error.Status = resp.StatusCode
		return env.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: undecodable reply %q: %w", method, u, raw, err)
	}
	return nil
}

// e2eRetryable: a transport failure, unavailable (no leader, or an unknown
// outcome) or backpressure. Every write this test retries carries an
// idempotency key, so retrying an unknown outcome is safe.
func e2eRetryable(err error) bool {
	var ae *e2eAPIError
	if !errors.As(err, &ae) {
		return true
	}
	return ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusTooManyRequests
}

// write posts in to path, rotating through nodes from the first and
// retrying e2eRetryable failures with a bounded backoff (25ms doubling to
// 400ms) until ctx ends. It returns the number of attempts.
func (c *e2eAPIClient) write(ctx context.Context, nodes []*e2eNode, path string, in, out any) (int, error) {
	var last error
	for attempt := 0; ; attempt++ {
		err := c.call(ctx, http.MethodPost, nodes[attempt%len(nodes)].url()+path, in, out)
		if err == nil || !e2eRetryable(err) {
			return attempt + 1, err
		}
		last = err
		t := time.NewTimer(min(25*time.Millisecond<<min(attempt, 4), 400*time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return attempt + 1, fmt.Errorf("not acknowledged before the deadline: %w", last)
		}
	}
}

// get reads one node; stale reads are served locally.
func (c *e2eAPIClient) get(ctx context.Context, n *e2eNode, id string, stale bool) (*e2eNodeReply, error) {
	u := n.url() + "/v1/nodes/get?node_id=" + url.QueryEscape(id)
	if stale {
		u += "&consistency=stale"
	}
	var out e2eNodeReply
	if err := c.call(ctx, http.MethodGet, u, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *e2eAPIClient) status(ctx context.Context, n *e2eNode) (*e2eStatusReply, error) {
	var st e2eStatusReply
	if err := c.call(ctx, http.MethodGet, n.url()+"/v1/cluster/status", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func (c *e2eAPIClient) stateHash(ctx context.Context, n *e2eNode) (*e2eHashReply, error) {
	var h e2eHashReply
	if err := c.call(ctx, http.MethodGet, n.url()+"/v1/cluster/state-hash", nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// stateHashAt asks n for the hash of its state as of exactly index; ok is
// false when n answers 409 (index applied inside a batch, or passed).
func (c *e2eAPIClient) stateHashAt(ctx context.Context, n *e2eNode, index uint64) (h *e2eHashReply, ok bool, err error) {
	h = &e2eHashReply{}
	url := fmt.Sprintf("%s/v1/cluster/state-hash?index=%d", n.url(), index)
	if err := c.call(ctx, http.MethodGet, url, nil, h); err != nil {
		var ae *e2eAPIError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			return nil, false, nil
		}
		return nil, false, err
	}
	return h, true, nil
}

// e2eProps is the expected properties of a node: field -> canonical JSON.
type e2eProps map[string]string

// check reports how got differs from want, or "" if it does not.
func (want e2eProps) check(got *e2eNodeReply) string {
	if len(got.Properties) != len(want) {
		return fmt.Sprintf("properties %s, want %v", e2eRaw(got.Properties), want)
	}
	for k, v := range want {
		if string(got.Properties[k]) != v {
			return fmt.Sprintf("properties %s, want %v", e2eRaw(got.Properties), want)
		}
	}
	return ""
}

func e2eRaw(m map[string]json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// e2eJSON is v's JSON encoding, which for strings and integers is the
// canonical JSON the state machine stores.
func e2eJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
