package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster/memberrec"
	"github.com/arbiterhq/arbiter/cluster/offline"
	logstore "github.com/arbiterhq/arbiter/log/store"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// memberOf is the member id of st, or nil.
func memberOf(st cluster.Status, id string) *cluster.MemberStatus {
	for i := range st.Members {
		if st.Members[i].ID == id {
			return &st.Members[i]
		}
	}
	return nil
}

// The leader's rules for joins: an id that is a member with other
// addresses, an API address of another member and a process without data
// with a voter's id and address are refused (409) and change nothing; a
// move or a metadata refresh of a non-member is not_found; replace and
// change_address together, and refresh with fresh, are invalid. A member that never starts joins as a non-voter: with one
// voter down the cluster still commits, it is never promoted, and it is
// removed. A replacement removes the old member (which, still running,
// finds itself replaced and stops) and joins as a non-voter, then votes.
func TestJoinRules(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{TCP: true, Nodes: 3, Configure: steadyTimings})
	leader := c.WaitLeader(10 * time.Second)
	f, g := (leader+1)%3, (leader+2)%3
	lb, fb := apiBase(c, leader), apiBase(c, f)
	fn := c.Node(f)
	before := memberSet(statusVia(t, lb).Members)
	unchanged := func(what string) {
		t.Helper()
		if got := memberSet(statusVia(t, lb).Members); strings.Join(got, ";") != strings.Join(before, ";") {
			t.Errorf("%s changed the members: %v -> %v", what, before, got)
		}
	}
	refused := func(what string, req cluster.JoinRequest, status int, code errs.Code, says ...string) {
		t.Helper()
		r := apiPost(t, fb+"/v1/cluster/join", req)
		r.wantError(t, what, status, code)
		for _, s := range says {
			if !strings.Contains(string(r.body), s) {
				t.Errorf("%s: the refusal does not say %q: %s", what, s, r.body)
			}
		}
		unchanged(what)
	}
	refused("another process with a member's id", cluster.JoinRequest{ID: fn.ID(), RaftAddr: deadAddr(t), APIAddr: deadAddr(t)},
		409, errs.CodeConflict, "member "+fn.ID()+" already exists", fn.RaftAddr(), "replace")
	refused("another member's API address", cluster.JoinRequest{ID: "n9", RaftAddr: deadAddr(t), APIAddr: fn.APIAddr()},
		409, errs.CodeConflict, "belongs to member "+fn.ID())
	refused("a voter's id and address from a process without data", cluster.JoinRequest{ID: fn.ID(), RaftAddr: fn.RaftAddr(), APIAddr: fn.APIAddr(), Fresh: true},
		409, errs.CodeConflict, "no data", "replace")
	refused("a move of a non-member", cluster.JoinRequest{ID: "nobody", RaftAddr: deadAddr(t), APIAddr: deadAddr(t), ChangeAddress: true},
		404, errs.CodeNotFound)
	refused("replace and change_address", cluster.JoinRequest{ID: fn.ID(), RaftAddr: deadAddr(t), APIAddr: deadAddr(t), Replace: true, ChangeAddress: true},
		422, errs.CodeInvalid)
	// What a removed member's registration, still on its way, looks like:
	// it must not add the member back.
	refused("a refresh from a non-member", cluster.JoinRequest{ID: "removed-meanwhile", RaftAddr: deadAddr(t), APIAddr: deadAddr(t), Refresh: true},
		404, errs.CodeNotFound, "not a member", "removed")
	refused("refresh from a process without data", cluster.JoinRequest{ID: fn.ID(), RaftAddr: fn.RaftAddr(), APIAddr: fn.APIAddr(), Refresh: true, Fresh: true},
		422, errs.CodeInvalid)

	// A member that never starts.
	apiPost(t, fb+"/v1/cluster/join", cluster.JoinRequest{ID: "ghost", RaftAddr: deadAddr(t), APIAddr: deadAddr(t)}).ok(t, "join of a member that never starts", nil)
	if m := memberOf(statusVia(t, lb), "ghost"); m == nil || m.Voter {
		t.Fatalf("ghost after its join: %+v, want a non-voter", m)
	}
	c.Stop(g)
	if res := mustCreate(t, apiBase(c, c.WaitLeader(10*time.Second)), map[string]any{"node_id": "ghost-and-one-down"}); !res.Created {
		t.Fatalf("write with a ghost member and one voter down: %+v", res)
	}
	if m := memberOf(statusVia(t, lb), "ghost"); m == nil || m.Voter {
		t.Fatalf("ghost later: %+v, want still a non-voter", m)
	}
	apiPost(t, lb+"/v1/cluster/remove", cluster.RemoveRequest{ID: "ghost"}).ok(t, "remove ghost", nil)
	c.Restart(g)
	c.WaitVoters(10 * time.Second)

	// A replacement for f, while the old f still runs.
	cfg := standaloneConfig(t, fn.ID())
	steadyTimings(0, &cfg)
	cfg.Join, cfg.Replace = []string{lb}, true
	repl := startNode(t, cfg, 15*time.Second)
	select {
	case <-fn.Done():
		if !errors.Is(fn.Err(), errs.NotFound) || !strings.Contains(fn.Err().Error(), "replaced") {
			t.Errorf("the replaced member stopped with %v, want not_found saying it was replaced", fn.Err())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the replaced member still runs 15s after its replacement joined")
	}
	// (The old f stopped on its own; clustertest still counts it as
	// running, so the replacement's view is asked, not WaitLeader's.)
	if !c.Eventually(15*time.Second, func() bool {
		st := repl.Status()
		m := memberOf(st, fn.ID())
		return st.LeaderID != "" && m != nil && m.Voter && m.RaftAddr == repl.RaftAddr() && m.APIAddr == repl.APIAddr()
	}) {
		t.Fatalf("the replacement never became the voter %s: %+v", fn.ID(), repl.Status())
	}
	if res := mustCreate(t, "http://"+repl.APIAddr(), map[string]any{"node_id": "via-replacement"}); !res.Created {
		t.Fatalf("write through the replacement: %+v", res)
	}
}

// A removed member stops on its own: Done closes and Err says why.
func TestRemovedMemberStops(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{TCP: true, Nodes: 3, Configure: steadyTimings})
	leader := c.WaitLeader(10 * time.Second)
	victim := c.Node((leader + 1) % 3)
	apiPost(t, apiBase(c, leader)+"/v1/cluster/remove", cluster.RemoveRequest{ID: victim.ID()}).ok(t, "remove", nil)
	select {
	case <-victim.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the removed member still runs 10s after its removal: %+v", victim.Status())
	}
	if err := victim.Err(); !errors.Is(err, errs.NotFound) || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("the removed member stopped with %v, want not_found saying it was removed", err)
	}
	if err := c.Node(leader).Err(); err != nil {
		t.Errorf("the leader reports %v", err)
	}
}

// Start refuses, before raft runs and with a message naming the settings
// to change, what one wrong setting used to break: no state and nothing to
// start from (creating nothing), another member's data directory, other
// addresses without ChangeAddress, a seed into a directory with state or
// from a damaged backup.
// With ChangeAddress the node moves, and its record follows.
func TestStartRefusals(t *testing.T) {
	ctx := context.Background()
	start := func(cfg cluster.Config) (*cluster.Node, error) {
		n, err := cluster.New(cfg)
		if err != nil {
			return nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := n.Start(sctx); err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = n.Close() })
		return n, nil
	}
	mustRefuse := func(what string, cfg cluster.Config, code errs.Code, says ...string) {
		t.Helper()
		n, err := start(cfg)
		if err == nil {
			_ = n.Close()
			t.Fatalf("%s: started", what)
		}
		if errs.CodeOf(err) != code {
			t.Errorf("%s: %v, want %s", what, err, code)
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
	}

	lone := standaloneConfig(t, "lone")
	lone.FlagNames = map[string]string{"Bootstrap": "--bootstrap", "Join": "--join"}
	mustRefuse("no state, no Bootstrap, no Join", lone, errs.CodeInvalid, "--bootstrap", "--join")
	if _, err := os.Stat(lone.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused start created %s: %v", lone.DataDir, err)
	}
	damaged := standaloneConfig(t, "seeded")
	damaged.Bootstrap, damaged.Restore = true, filepath.Join(t.TempDir(), "damaged.snap")
	if err := os.WriteFile(damaged.Restore, []byte("ARBSNAP\x01 not a backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRefuse("a seed from a damaged backup", damaged, errs.CodeInvalid, damaged.Restore)
	if _, err := os.Stat(damaged.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused seed created %s: %v", damaged.DataDir, err)
	}
	lone.AwaitJoin = true
	if n, err := start(lone); err != nil {
		t.Fatalf("AwaitJoin: %v", err)
	} else if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	base := standaloneConfig(t, "solo")
	base.Bootstrap = true
	first, err := start(base)
	if err != nil {
		t.Fatal(err)
	}
	base.RaftAddr, base.HTTPAddr = first.RaftAddr(), first.APIAddr()
	mustCreate(t, "http://"+first.APIAddr(), map[string]any{"node_id": "kept"})
	if !waitFor(10*time.Second, func() bool { return first.Status().ClusterID != "" }) {
		t.Fatal("the cluster was never named")
	}
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	other := base
	other.ID = "intruder"
	mustRefuse("another member's data directory", other, errs.CodeConflict, "belongs to member solo")
	moved := base
	moved.HTTPAddr = deadAddr(t)
	mustRefuse("another API address", moved, errs.CodeConflict, base.HTTPAddr, moved.HTTPAddr, "ChangeAddress")
	seeded := base
	seeded.Restore = "/nonexistent.snap"
	mustRefuse("a seed into a directory with state", seeded, errs.CodeConflict, "already holds cluster state")

	moved.ChangeAddress = true
	n, err := start(moved)
	if err != nil {
		t.Fatalf("start with ChangeAddress: %v", err)
	}
	if !waitFor(10*time.Second, func() bool {
		m := memberOf(n.Status(), "solo")
		rec, _ := memberrec.Read(base.DataDir)
		return m != nil && m.APIAddr == moved.HTTPAddr && rec != nil && rec.APIAddr == moved.HTTPAddr
	}) {
		rec, _ := memberrec.Read(base.DataDir)
		t.Fatalf("the move never completed: %+v, record %+v", n.Status().Members, rec)
	}
	apiGet(t, getURL("http://"+n.APIAddr(), "kept")).ok(t, "read after the move", nil)
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	moved.ChangeAddress = false
	n, err = start(moved) // the new address is the recorded one now
	if err != nil {
		t.Fatalf("restart on the new address without ChangeAddress: %v", err)
	}
	_ = n.Close()
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Validate names the settings as FlagNames says and refuses Replace
// without Join and Restore without Bootstrap.
func TestConfigMembershipRelations(t *testing.T) {
	cfg := standaloneConfig(t, "v")
	cfg.Replace, cfg.Restore = true, "x.snap"
	cfg.FlagNames = map[string]string{"Replace": "--replace", "Join": "--join", "Restore": "--restore", "Bootstrap": "--bootstrap"}
	err := cfg.Validate()
	for _, s := range []string{"--replace needs --join", "--restore seeds a new cluster: it needs --bootstrap"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("Validate: %v, want it to say %q", err, s)
		}
	}
}

// A request may bound itself (timeout_ms, Request-Timeout): without a
// quorum it is answered 503 with Retry-After near that bound; bad bounds
// are invalid; timeout_ms does not upset routes that check their query
// parameters.
func TestRequestDeadline(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	keep := (leader + 1) % 3
	base := apiBase(c, keep)
	apiGet(t, getURL(base, "absent", "timeout_ms=2000")).wantError(t, "get with timeout_ms", 404, errs.CodeNotFound)
	for _, bad := range []string{"timeout_ms=0", "timeout_ms=60001", "timeout_ms=soon", "timeout_ms=1&timeout_ms=2"} {
		apiGet(t, getURL(base, "absent", bad)).wantError(t, bad, 422, errs.CodeInvalid)
	}
	for _, bad := range []string{"0", "-5ms", "2m", "later"} {
		r := apiDoHeader(t, base+"/v1/nodes/create", map[string]any{"node_id": "h"}, bad)
		r.wantError(t, "Request-Timeout "+bad, 422, errs.CodeInvalid)
	}

	c.Stop(leader)
	c.Stop((leader + 2) % 3)
	begin := time.Now()
	apiPost(t, base+"/v1/nodes/create?timeout_ms=300", map[string]any{"node_id": "no-quorum"}).wantError(t, "create with timeout_ms=300 and no quorum", 503, errs.CodeUnavailable)
	if took := time.Since(begin); took > 2500*time.Millisecond {
		t.Errorf("a request bounded to 300ms took %v without a quorum", took)
	}
	for _, h := range []string{"250", "250ms", "0.25s"} {
		begin = time.Now()
		apiDoHeader(t, base+"/v1/nodes/create", map[string]any{"node_id": "no-quorum"}, h).wantError(t, "create with Request-Timeout "+h, 503, errs.CodeUnavailable)
		if took := time.Since(begin); took > 2500*time.Millisecond {
			t.Errorf("a request bounded by Request-Timeout %s took %v without a quorum", h, took)
		}
	}
	begin = time.Now()
	apiGet(t, getURL(base, "absent", "timeout_ms=300")).wantError(t, "linearizable get with timeout_ms=300 and no quorum", 503, errs.CodeUnavailable)
	if took := time.Since(begin); took > 2500*time.Millisecond {
		t.Errorf("a read bounded to 300ms took %v without a quorum", took)
	}
}

// apiDoHeader posts v with a Request-Timeout header.
func apiDoHeader(t *testing.T, url string, v any, timeout string) apiReply {
	t.Helper()
	return apiDoWith(t, url, v, map[string]string{cluster.RequestTimeoutHeader: timeout})
}

// apiDoWith posts v as JSON with extra headers.
func apiDoWith(t *testing.T, url string, v any, headers map[string]string) apiReply {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return apiReply{status: resp.StatusCode, header: resp.Header, body: raw}
}

// A node with state resumes with neither Bootstrap nor Join, on either
// log store: the start checks must see a raft-wal directory's state as
// well as raft.db's.
func TestRestartWithoutFlagsOnEitherLogStore(t *testing.T) {
	for _, kind := range []string{logstore.Bolt, logstore.WAL} {
		t.Run(kind, func(t *testing.T) {
			cfg := standaloneConfig(t, "solo")
			cfg.LogStore, cfg.Bootstrap = kind, true
			n, err := cluster.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := n.Start(ctx); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, "http://"+n.APIAddr(), map[string]any{"node_id": "kept"})
			cfg.RaftAddr, cfg.HTTPAddr = n.RaftAddr(), n.APIAddr()
			if err := n.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if has, err := offline.HasState(cfg.DataDir); !has || err != nil {
				t.Fatalf("HasState of a %s directory after writes = %v, %v", kind, has, err)
			}
			cfg.Bootstrap = false
			n, err = cluster.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if err := n.Start(ctx); err != nil {
				t.Fatalf("restart of a %s node without Bootstrap or Join: %v", kind, err)
			}
			if !waitFor(10*time.Second, func() bool { return n.IsLeader() }) {
				t.Fatal("the restarted node never led")
			}
			apiGet(t, getURL("http://"+n.APIAddr(), "kept")).ok(t, "read after the restart", nil)
		})
	}
}
