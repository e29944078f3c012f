package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

// /readyz?require= names the commands a caller needs; a cluster that
// does not enable one of them is an incompatible deployment: 503 naming
// every missing one (also in detail.missing), never 200.
func TestReadyzRequiresCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	c.WaitEnabled(10 * time.Second)
	base := apiBase(c, 0)
	if !c.Eventually(10*time.Second, func() bool { return apiGet(t, base+"/readyz").status == 200 }) {
		t.Fatalf("readyz: %s", apiGet(t, base+"/readyz").body)
	}

	// Commands by their name with or without the domain's prefix, a
	// whole domain, a least version.
	apiGet(t, base+"/readyz?require=capacity.acquire,workitem.workitem_submit,projection,capacity.acquire@2").ok(t, "readyz with enabled commands", nil)

	r := apiGet(t, base+"/readyz?require=capacity.acquire,nosuch.thing,workitem.frobnicate,capacity.acquire@9,nodes")
	r.wantError(t, "readyz with missing commands", 503, errs.CodeUnavailable)
	var body struct {
		Error struct {
			Message string `json:"message"`
			Detail  struct {
				Missing []string `json:"missing"`
			} `json:"detail"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	want := []string{"nosuch.thing", "workitem.frobnicate", "capacity.acquire@9"}
	if !slices.Equal(body.Error.Detail.Missing, want) {
		t.Errorf("detail.missing = %q, want %q", body.Error.Detail.Missing, want)
	}
	for _, m := range want {
		if !strings.Contains(body.Error.Message, m) {
			t.Errorf("message %q does not name %s", body.Error.Message, m)
		}
	}
	if strings.Contains(body.Error.Message, "capacity.acquire,") || strings.Contains(body.Error.Message, "nodes") {
		t.Errorf("message %q names an enabled requirement", body.Error.Message)
	}

	for _, bad := range []string{"capacity..acquire", "Capacity.acquire", "capacity.acquire@0", "capacity.acquire@x", "a.b.c"} {
		apiGet(t, base+"/readyz?require="+bad).wantError(t, "readyz?require="+bad, 422, errs.CodeInvalid)
	}
	apiGet(t, base+"/readyz?require="+strings.Repeat("nodes,", 65)+"nodes").wantError(t, "readyz with 66 requirements", 422, errs.CodeInvalid)
}

// The Go client asks the same check: Remote.Ready, and a Remote made
// WithRequire refuses to submit work to a cluster that lacks a command,
// before anything is sent.
func TestRemoteRequiresCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	c.WaitEnabled(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr := c.Node(0).APIAddr()
	if !c.Eventually(10*time.Second, func() bool { return cluster.NewRemote(addr).Ready(ctx) == nil }) {
		t.Fatalf("never ready: %v", cluster.NewRemote(addr).Ready(ctx))
	}
	if err := cluster.NewRemote(addr).Ready(ctx, "nodes.create", "capacity.acquire"); err != nil {
		t.Fatalf("Ready with enabled commands: %v", err)
	}
	err := cluster.NewRemote("127.0.0.1:1", addr).Ready(ctx, "nodes.create", "nosuch.thing")
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.CodeUnavailable || !strings.Contains(e.Message, "nosuch.thing") {
		t.Fatalf("Ready with a missing command: %v", err)
	}

	lacking := cluster.NewRemote(addr).WithRequire("nodes.create", "nosuch.thing")
	_, err = nodes.NewClient(lacking, lacking).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "not-submitted"})
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "nosuch.thing") || errs.IsOutcomeUnknown(err) {
		t.Fatalf("create through a remote requiring a missing command: %v", err)
	}
	plain := cluster.NewRemote(addr)
	if _, err := nodes.NewClient(plain, plain).Get(ctx, "not-submitted", fsm.Linearizable); !errors.Is(err, errs.NotFound) {
		t.Fatalf("the refused create was submitted: %v", err)
	}
	having := cluster.NewRemote(addr).WithRequire("nodes.create")
	if _, err := nodes.NewClient(having, having).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "submitted"}); err != nil {
		t.Fatalf("create through a remote requiring enabled commands: %v", err)
	}
}
