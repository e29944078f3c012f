package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

func TestCluster(t *testing.T) {
	ctx, c := ctxOf(t), newClient(t, "ops")
	cl := c.Cluster()
	st, err := cl.Status(ctx)
	must(t, err)
	if st.LeaderID == "" || len(st.Members) != 3 || st.AppliedIndex == 0 || st.AuthMode == "" {
		t.Fatalf("status: %+v", st)
	}
	members, err := cl.Members(ctx)
	must(t, err)
	voters := 0
	for _, m := range members {
		if m.Voter && m.APIAddr != "" {
			voters++
		}
	}
	if voters != 3 {
		t.Fatalf("members: %+v", members)
	}
	caps, err := cl.Capabilities(ctx, client.Linearizable)
	must(t, err)
	names := map[string]bool{}
	for _, d := range caps.Enabled.Domains {
		names[d.Name] = len(d.Commands) > 0
	}
	for _, d := range []string{"nodes", "authority", "capacity", "allocation", "projection", "workitem"} {
		if !names[d] {
			t.Errorf("capabilities enable no %s: %+v", d, caps.Enabled)
		}
	}
	me, err := cl.Whoami(ctx)
	must(t, err)
	if me.Principal != "ops" || me.OwnerDigest == "" || len(me.Roles) != 1 || me.Roles[0] != "admin" {
		t.Fatalf("whoami: %+v", me)
	}

	ready, err := cl.Ready(ctx, "capacity.acquire", "projection")
	must(t, err)
	if ready.Status != "ready" || ready.LeaderID == "" {
		t.Fatalf("ready: %+v", ready)
	}
	_, err = cl.Ready(ctx, "capacity.acquire@99")
	wantCode(t, err, errs.CodeUnavailable)
	if missing, _ := errs.From(err).Detail["missing"].([]any); len(missing) != 1 {
		t.Fatalf("not ready names what is missing: %v", errs.From(err).Detail)
	}
	health := cl.Health(ctx, "nodes")
	if len(health) != 3 {
		t.Fatalf("health: %+v", health)
	}
	for _, h := range health {
		if !h.Healthy || h.Err != nil {
			t.Fatalf("health: %+v", h)
		}
	}
	health = cl.Health(ctx, "nodes.create@99")
	if health[0].Healthy || !strings.Contains(health[0].Err.Error(), "nodes.create@99") {
		t.Fatalf("health with a missing requirement: %+v", health[0])
	}
}

func TestClusterWatch(t *testing.T) {
	ctx, c := ctxOf(t), newClient(t, "ops")
	cl := c.Cluster()
	head, err := cl.Changes(ctx, client.ChangesQuery{Limit: 1})
	must(t, err)
	start := head.LastSeq
	prefix := unique(t)
	for _, s := range []string{"a", "b", "c"} {
		_, err := c.Nodes().Create(ctx, client.CreateRequest{NodeID: prefix + "/" + s})
		must(t, err)
	}
	// Without follow: every change after the cursor, two a page, then
	// the end of the feed.
	w := cl.Watch(client.ChangesQuery{After: start, Limit: 2}, false)
	var mine []string
	var last uint64
	for ev, err := range w.Events(ctx) {
		must(t, err)
		if ev.Seq <= last {
			t.Fatalf("events out of order: %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		if strings.Contains(ev.Key, prefix) {
			mine = append(mine, ev.Key)
		}
	}
	if len(mine) != 3 || !strings.HasSuffix(mine[0], prefix+"/a") || !strings.HasSuffix(mine[2], prefix+"/c") {
		t.Fatalf("watched %v", mine)
	}
	if w.Cursor() < last {
		t.Fatalf("cursor %d before the last event %d", w.Cursor(), last)
	}

	// Following: a change made after the watch began arrives through the
	// long poll; stopping leaves the cursor after the event taken.
	f := cl.Watch(client.ChangesQuery{After: w.Cursor(), Wait: 5 * time.Second}, true)
	go func() { // before or while the watch waits: either way it arrives
		_, _ = c.Nodes().Create(ctx, client.CreateRequest{NodeID: prefix + "/d"})
	}()
	var got client.Event
	for ev, err := range f.Events(ctx) {
		must(t, err)
		if strings.Contains(ev.Key, prefix+"/d") {
			got = ev
			break
		}
	}
	if got.Seq == 0 || f.Cursor() < got.Seq {
		t.Fatalf("followed %+v, cursor %d", got, f.Cursor())
	}
	_, err = cl.Changes(ctx, client.ChangesQuery{Limit: 5000})
	wantCode(t, err, errs.CodeInvalid)
}
