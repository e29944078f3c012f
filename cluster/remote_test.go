package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/nodes"
)

// deadAddr is a loopback host:port nothing listens on: a listener's
// address, closed again.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// The node primitives run over Remote exactly as over an embedded node,
// and a dead address in the list is skipped.
func TestRemoteRunsNodePrimitives(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: steadyTimings})
	addrs := []string{deadAddr(t)}
	for i := range c.Size() {
		addrs = append(addrs, c.Node(i).APIAddr())
	}
	remote := rawremote.New(addrs...).WithTimeout(10 * time.Second)
	nc := nodes.On(remote)
	ctx := context.Background()
	// Every call must succeed whichever address the rotation starts at, so
	// each step below runs more times than there are addresses.
	rounds := len(addrs) + 1

	created, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "r-1", Labels: []string{"remote"}, Properties: map[string]any{"n": 1}})
	if err != nil || !created.Created || created.Node.Version != 1 || string(created.Node.Properties["n"]) != "1" {
		t.Fatalf("create r-1: %+v %v", created, err)
	}
	for k := range rounds {
		again, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "r-1", Properties: map[string]any{"n": k + 10}})
		if err != nil || again.Created || string(again.Node.Properties["n"]) != "1" {
			t.Fatalf("create r-1 again (%d): %+v %v", k, again, err)
		}
		got, err := nc.Get(ctx, "r-1", fsm.Linearizable)
		if err != nil || got.Version != 1 || !slices.Equal(got.Labels, []string{"remote"}) {
			t.Fatalf("get r-1 (%d): %+v %v", k, got, err)
		}
	}

	swap, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "r-1", Conditions: map[string]any{"n": 1}, Updates: map[string]any{"n": 2, "owner": "me"}})
	if err != nil || !swap.Swapped || swap.Node.Version != 2 || string(swap.Node.Properties["owner"]) != `"me"` {
		t.Fatalf("cas r-1: %+v %v", swap, err)
	}
	for k := range rounds {
		stale, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "r-1", Conditions: map[string]any{"n": 1}, Updates: map[string]any{"n": 3}})
		if err != nil || stale.Swapped || stale.Node.Version != 2 {
			t.Fatalf("stale cas r-1 (%d): %+v %v", k, stale, err)
		}
		_, err = nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "r-missing", Updates: map[string]any{"n": 1}})
		if !errors.Is(err, errs.NotFound) || errs.IsOutcomeUnknown(err) {
			t.Fatalf("cas of a missing node (%d): %v, want not_found", k, err)
		}
		_, err = nc.Get(ctx, "r-missing", fsm.Linearizable)
		if !errors.Is(err, errs.NotFound) {
			t.Fatalf("get of a missing node (%d): %v, want not_found", k, err)
		}
	}
	removed, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "r-1", Conditions: map[string]any{"owner": "me"}, Updates: map[string]any{"owner": nil}})
	if err != nil || !removed.Swapped || len(removed.Node.Properties) != 1 || removed.Node.Version != 3 {
		t.Fatalf("cas removing owner: %+v %v", removed, err)
	}

	// Keyed requests replay through Remote.
	keyed := nodes.CreateRequest{NodeID: "r-keyed", IdempotencyKey: "rk"}
	first, err := nc.CreateIfAbsent(ctx, keyed)
	if err != nil || !first.Created || first.Replayed {
		t.Fatalf("keyed create: %+v %v", first, err)
	}
	replay, err := nc.CreateIfAbsent(ctx, keyed)
	if err != nil || !replay.Created || !replay.Replayed || replay.Node.CreatedIndex != first.Node.CreatedIndex {
		t.Fatalf("keyed create replay: %+v %v", replay, err)
	}
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "r-other", IdempotencyKey: "rk"}); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("same key, other request: %v, want idempotency_conflict", err)
	}

	// by-label pages through Remote.
	for i := range 5 {
		if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: fmt.Sprintf("r-page-%d", i), Labels: []string{"rpaged"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, consistency := range []fsm.Consistency{fsm.Linearizable, fsm.Stale} {
		var ids []string
		after := ""
		for pages := 0; pages < 10; pages++ {
			var page *nodes.Page
			if !c.Eventually(5*time.Second, func() bool {
				page, err = nc.ByLabel(ctx, nodes.LabelQuery{Label: "rpaged", After: after, Limit: 2}, consistency)
				// A stale read through a follower may lag; only the first page can be short of it.
				return err == nil && (consistency == fsm.Linearizable || after != "" || len(page.Nodes) == 2)
			}) {
				t.Fatalf("by-label (consistency %d) after %q: %+v %v", consistency, after, page, err)
			}
			for _, n := range page.Nodes {
				ids = append(ids, n.NodeID)
			}
			if page.NextCursor == "" {
				break
			}
			after = page.NextCursor
		}
		if want := []string{"r-page-0", "r-page-1", "r-page-2", "r-page-3", "r-page-4"}; consistency == fsm.Linearizable && !slices.Equal(ids, want) {
			t.Errorf("by-label pages: %v, want %v", ids, want)
		}
	}
	if _, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: "rpaged", After: "garbage"}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
		t.Errorf("by-label with a cursor never issued: %v, want invalid", err)
	}
	if _, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: "rpaged", Limit: nodes.MaxLabelPage + 1}, fsm.Linearizable); !errors.Is(err, errs.Invalid) {
		t.Errorf("by-label over the page bound: %v, want invalid", err)
	}

	// The same state is visible through an embedded node.
	local, err := nodes.NewClient(c.Node(0), c.Node(0)).Get(ctx, "r-1", fsm.Linearizable)
	if err != nil || local.Version != 3 {
		t.Errorf("r-1 through an embedded node: %+v %v", local, err)
	}

	// Status answers from a live node.
	ids := map[string]bool{}
	for i := range c.Size() {
		ids[c.Node(i).ID()] = true
	}
	for k := range rounds {
		st, err := remote.Status(ctx)
		if err != nil {
			t.Fatalf("status (%d): %v", k, err)
		}
		if !ids[st.NodeID] || !ids[st.LeaderID] || len(st.Members) != 3 || st.CommitIndex == 0 {
			t.Errorf("status (%d): %+v", k, st)
		}
	}
}

// A Remote that reaches no node fails with unavailable, and says the
// command was not applied (its outcome is known), within its timeout.
func TestRemoteWithOnlyDeadAddressesIsUnavailable(t *testing.T) {
	remote := rawremote.New(deadAddr(t), "http://"+deadAddr(t)+"/").WithTimeout(5 * time.Second)
	nc := nodes.On(remote)
	ctx := context.Background()
	calls := []struct {
		name string
		call func() error
	}{
		{"create", func() error {
			_, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "x"})
			return err
		}},
		{"cas", func() error {
			_, err := nc.CompareAndSet(ctx, nodes.CASRequest{NodeID: "x", Updates: map[string]any{"a": 1}})
			return err
		}},
		{"get", func() error {
			_, err := nc.Get(ctx, "x", fsm.Linearizable)
			return err
		}},
		{"stale by-label", func() error {
			_, err := nc.ByLabel(ctx, nodes.LabelQuery{Label: "x"}, fsm.Stale)
			return err
		}},
		{"status", func() error {
			_, err := remote.Status(ctx)
			return err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			err := tc.call()
			if !errors.Is(err, errs.Unavailable) {
				t.Fatalf("%v, want unavailable", err)
			}
			if errs.IsOutcomeUnknown(err) {
				t.Errorf("%v: marked outcome unknown, but no node was reached", err)
			}
			if took := time.Since(begin); took > 4*time.Second {
				t.Errorf("took %v to fail against refused connections", took)
			}
		})
	}

	// A request that fails shape checks never needs the network.
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: ""}); !errors.Is(err, errs.Invalid) {
		t.Errorf("empty node id through a dead remote: %v, want invalid", err)
	}
	// A remote without addresses refuses every call as invalid.
	empty := rawremote.New()
	if _, err := nodes.On(empty).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "x"}); !errors.Is(err, errs.Invalid) {
		t.Errorf("remote without addresses: %v, want invalid", err)
	}
	if st, err := empty.Status(ctx); !errors.Is(err, errs.Invalid) {
		t.Errorf("status of a remote without addresses: %+v, %v; want invalid", st, err)
	}
}
