package domain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
)

// counters is a throwaway domain, defined here and nowhere else: named
// counters that only grow. The host has never heard of it.
const (
	cmdCounterAdd   log.Type      = 990
	queryCounterGet fsm.QueryType = 990
)

type counter struct {
	Name  string `msgpack:"name" json:"name"`
	Value uint64 `msgpack:"value" json:"value"`
}

type addRequest struct {
	Name string `msgpack:"name" json:"name"`
	By   uint64 `msgpack:"by" json:"by"`
}

// Validate is the payload's rule, which fsm.Handle runs (fsm.Validator).
func (r *addRequest) Validate() error {
	if r.Name == "" || r.By == 0 {
		return errs.New(errs.CodeInvalid, "name and by are required")
	}
	return nil
}

func counterModule() fsm.Module {
	return fsm.Module{
		Name:  "counters",
		Types: fsm.TypeRange{First: 990, Last: 999}, // a plug-in's own block
		Tables: []fsm.Table{{New: func() any { return new(counter) }, Schema: &memdb.TableSchema{
			Name:    "counters",
			Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}}},
		}}},
		// The command declares its payload, its role and its body; the
		// host decodes, validates and checks the role around the body.
		Commands: []fsm.CommandSpec{{Type: cmdCounterAdd, Name: "counter_add", MaxVersion: 1, Apply: fsm.Handle(fsm.Typed[addRequest]{
			Role: identity.RoleMember,
			Apply: func(tx *fsm.Tx, _ *log.Command, req *addRequest) (any, error) {
				c := counter{Name: req.Name}
				if raw, err := tx.First("counters", "id", req.Name); err != nil {
					return nil, err
				} else if raw != nil {
					c = *raw.(*counter)
				}
				c.Value += req.By
				if err := tx.Insert("counters", &c); err != nil {
					return nil, err
				}
				tx.Emit("counter_add", c.Name, "")
				return c, nil
			}})}},
		Queries: []fsm.QuerySpec{{Type: queryCounterGet, Name: "counter_get", Run: func(rt *fsm.ReadTx, payload []byte) (any, error) {
			var name string
			if err := fsm.DecodePayload(payload, &name); err != nil {
				return nil, err
			}
			raw, err := rt.Txn.First("counters", "id", name)
			if err != nil {
				return nil, err
			}
			if raw == nil {
				return nil, errs.Errorf(errs.CodeNotFound, "no counter %q", name)
			}
			return raw, nil
		}}},
	}
}

func counterDomain() domain.Domain {
	return domain.Domain{Name: "counters", Module: counterModule, Routes: func(h domain.Host) []domain.Route {
		return []domain.Route{
			domain.Post("/v1/counters/add", domain.Authenticated, func(ctx context.Context, req addRequest) (*counter, error) {
				var out counter
				_, err := fsm.Submit(ctx, h, log.Command{Type: cmdCounterAdd}, req, &out)
				return &out, err
			}),
			domain.Endpoint[counterQuery, counter]{Method: http.MethodGet, Path: "/v1/counters/get", Access: domain.Authenticated, Call: func(ctx context.Context, q counterQuery) (*counter, error) {
				var out counter
				return &out, fsm.Ask(ctx, h, queryCounterGet, q.Consistency == fsm.Stale, q.Name, &out)
			}}.Route(),
		}
	}}
}

type counterQuery struct {
	Name        string          `query:"name"`
	Consistency fsm.Consistency `query:"consistency"`
}

func withCounters() []domain.Domain { return append(builtin.Domains(), counterDomain()) }

// call sends a JSON request and decodes the answer, returning the status.
func call(t *testing.T, method, url string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// A domain defined outside the host (here, in a test) is served, its
// commands replicated and its table snapshotted, with no change to
// package cluster.
func TestThrowawayDomainPlugsIn(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Domains: func(int) []domain.Domain { return withCounters() }})
	leader := c.Leader()
	f1, f2 := (leader+1)%3, (leader+2)%3
	var got counter
	for range 2 {
		if st := call(t, "POST", c.URL(f1)+"/v1/counters/add", addRequest{Name: "hits", By: 5}, &got); st != 200 {
			t.Fatalf("add through a follower: %d %+v", st, got)
		}
	}
	if st := call(t, "GET", c.URL(f2)+"/v1/counters/get?name=hits", nil, &got); st != 200 || got.Value != 10 {
		t.Fatalf("get through the other follower: %d %+v, want 10", st, got)
	}
	var bad map[string]*errs.Error
	if st := call(t, "POST", c.URL(f1)+"/v1/counters/add", map[string]any{"name": "hits", "by": 1, "extra": 1}, &bad); st != 422 {
		t.Fatalf("unknown field: %d %v, want 422", st, bad)
	}
	c.WaitConverged(10 * time.Second)

	// The table is in snapshots and backups, and comes back from them.
	var backup bytes.Buffer
	if err := c.Node(leader).Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	info, err := c.Node(leader).FSM().InspectSnapshot(&backup)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tr := range info.Tables {
		found = found || (tr.Name == "counters" && tr.Rows == 1)
	}
	if !found {
		t.Fatalf("backup tables %+v lack counters with 1 row", info.Tables)
	}
	c.Snapshot(f2)
	c.Stop(f2)
	c.Restart(f2)
	if !c.Eventually(10*time.Second, func() bool {
		return call(t, "GET", c.URL(f2)+"/v1/counters/get?name=hits&consistency=stale", nil, &got) == 200 && got.Value == 10
	}) {
		t.Fatalf("restarted follower reads %+v", got)
	}
}

// One member's binary lacks a domain: its commands are refused with 503
// naming that member, the replicas never diverge, and once the member runs
// a binary with the domain the cluster enables it and it works. A member
// restarted with a binary that lacks a domain whose commands are in its
// log halts there and reports not ready; the cluster disables the domain
// again rather than let another such command in.
func TestMixedVersionsNeverDiverge(t *testing.T) {
	upgraded := false
	c := clustertest.New(t, clustertest.Options{NoWaitEnabled: true, Domains: func(i int) []domain.Domain {
		if i == 2 && !upgraded {
			return builtin.Domains()
		}
		return withCounters()
	}})
	builtinSet := domain.Served(builtin.Domains())
	waitEnabled := func(want fsm.Capabilities, nodes ...int) {
		t.Helper()
		if !c.Eventually(20*time.Second, func() bool {
			for _, i := range nodes {
				if have, gated := c.Node(i).FSM().Enabled(); !gated || !have.Equal(want) {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("enabled set never became %s", want)
		}
	}
	waitEnabled(builtinSet, 0, 1, 2)

	// Refused on every node, naming n3; nothing changes anywhere.
	before := c.WaitConverged(10 * time.Second)
	for i := range 3 {
		var e map[string]*errs.Error
		st := call(t, "POST", c.URL(i)+"/v1/counters/add", addRequest{Name: "hits", By: 1}, &e)
		if i == 2 {
			if st != 404 {
				t.Errorf("n3 lacks the routes: %d, want 404", st)
			}
			continue
		}
		if st != 503 || e["error"].Code != errs.CodeUnavailable || !strings.Contains(e["error"].Message, "n3") {
			t.Errorf("add on n%d: %d %+v, want 503 naming n3", i+1, st, e["error"])
		}
	}
	_, err := fsm.Submit(context.Background(), c.Node(0), log.Command{Type: cmdCounterAdd}, addRequest{Name: "hits", By: 1}, nil)
	if !errors.Is(err, errs.Unavailable) {
		t.Errorf("Go API on n1: %v, want unavailable", err)
	}
	if err := rawremote.New(c.URL(0)).Require(context.Background(), fsm.ServedBy(counterModule())); !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "counters") {
		t.Errorf("Require: %v, want unavailable naming counters", err)
	}
	if after := c.WaitConverged(10 * time.Second); after.Index == before.Index {
		t.Fatal("no entry between the two hashes")
	}

	// Upgrade n3: the cluster enables the domain and it works everywhere.
	c.Stop(2)
	upgraded = true
	c.Restart(2)
	waitEnabled(domain.Served(withCounters()), 0, 1, 2)
	var got counter
	for i := range 3 {
		if st := call(t, "POST", c.URL(i)+"/v1/counters/add", addRequest{Name: "hits", By: 1}, &got); st != 200 {
			t.Fatalf("after the upgrade, add on n%d: %d", i+1, st)
		}
	}
	if got.Value != 3 {
		t.Fatalf("hits = %d, want 3", got.Value)
	}
	c.WaitConverged(10 * time.Second)

	// Downgrade n3 on its data: replaying its log it meets counter_add,
	// which is enabled and which it cannot apply. It halts.
	c.Stop(2)
	upgraded = false
	c.Restart(2)
	if !c.Eventually(20*time.Second, func() bool { return c.Node(2).FSM().Halted() != nil }) {
		t.Fatal("the downgraded replica did not halt")
	}
	if h := c.Node(2).FSM().Halted(); h.Domain != "counters" || h.Command != "counter_add" {
		t.Fatalf("halt %+v", h)
	}
	var ready map[string]*errs.Error
	if st := call(t, "GET", c.URL(2)+"/readyz", nil, &ready); st != 503 || !strings.Contains(ready["error"].Message, "halted") {
		t.Fatalf("readyz of the halted replica: %d %+v", st, ready["error"])
	}
	var st cluster.Status
	if call(t, "GET", c.URL(2)+"/v1/cluster/status", nil, &st); st.Halted == nil {
		t.Fatalf("status of the halted replica: %+v", st)
	}
	// It said what it serves when it came back: the leader disables the
	// domain, and the other members keep serving everything else (the
	// halted one keeps the state it halted in).
	waitEnabled(builtinSet, 0, 1)
	var e map[string]*errs.Error
	if st := call(t, "POST", c.URL(0)+"/v1/counters/add", addRequest{Name: "hits", By: 1}, &e); st != 503 {
		t.Fatalf("add after the downgrade: %d %+v, want 503", st, e)
	}

	// The halted replica's log is whole, so it can win an election (a
	// loaded machine made it win one on its own). As leader it can commit
	// but never apply: it must hand over, not hold the cluster.
	leader := c.WaitLeader(10 * time.Second)
	if leader != 2 {
		if err := c.Node(leader).Raft().LeadershipTransferToServer("n3", "n3").Error(); err != nil {
			t.Fatalf("transfer to the halted replica: %v", err)
		}
	}
	if !c.Eventually(20*time.Second, func() bool {
		l := c.WaitLeader(10 * time.Second)
		return l != 2 && call(t, "POST", c.URL(l)+"/v1/nodes/create", map[string]any{"node_id": "after-handover"}, nil) == 200
	}) {
		t.Fatal("the cluster took no write after leadership went to the halted replica")
	}
}
