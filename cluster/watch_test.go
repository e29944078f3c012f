package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
)

type valuesPage struct {
	Events []struct {
		Seq         uint64          `json:"seq"`
		Kind        string          `json:"kind"`
		Key         string          `json:"key"`
		Tenant      string          `json:"tenant"`
		Value       json.RawMessage `json:"value"`
		Overwritten bool            `json:"overwritten"`
	} `json:"events"`
	Next uint64 `json:"next"`
}

// With include_values=true a node event carries the node it wrote, or
// says a later change overwrote it; without, events are keys only.
func TestChangesIncludeValues(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	base := apiBase(c, 0)
	start := feedLastSeq(t, base)
	mustCreate(t, base, map[string]any{"node_id": "v1", "properties": map[string]any{"n": 1}})
	apiPost(t, base+"/v1/nodes/cas", map[string]any{"node_id": "v1", "conditions": map[string]any{"n": 1}, "updates": map[string]any{"n": 2, "big": json.Number("1e21")}}).ok(t, "cas", nil)
	mustCreate(t, base, map[string]any{"node_id": "v2", "labels": []string{"l"}})

	var p valuesPage
	r := apiGet(t, fmt.Sprintf("%s/v1/changes?after=%d&include_values=true", base, start))
	r.ok(t, "changes with values", &p)
	var got []string
	for _, e := range p.Events {
		if e.Kind == "node_create" || e.Kind == "node_cas" {
			got = append(got, fmt.Sprintf("%s %s overwritten=%v %s", e.Kind, e.Key, e.Overwritten, e.Value))
		}
	}
	want := []string{
		"node_create v1 overwritten=true ",
		`node_cas v1 overwritten=false {"node_id":"v1","labels":[],"properties":{"big":1000000000000000000000,"n":2},"version":2,"created_index":` +
			p.eventIndex(t, "node_create", "v1") + `,"modified_index":` + p.eventIndex(t, "node_cas", "v1") + `}`,
		`node_create v2 overwritten=false {"node_id":"v2","labels":["l"],"properties":{},"version":1,"created_index":` +
			p.eventIndex(t, "node_create", "v2") + `,"modified_index":` + p.eventIndex(t, "node_create", "v2") + `}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events with values:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Without the parameter, or with false: keys only.
	for _, q := range []string{"", "&include_values=false"} {
		r := apiGet(t, fmt.Sprintf("%s/v1/changes?after=%d%s", base, start, q))
		r.ok(t, "changes", nil)
		if strings.Contains(string(r.body), `"value"`) || strings.Contains(string(r.body), `"overwritten"`) {
			t.Errorf("changes%s carries values: %s", q, r.body)
		}
	}
	apiGet(t, base+"/v1/changes?include_values=yes").wantError(t, "include_values=yes", http.StatusUnprocessableEntity, errs.CodeInvalid)
	apiGet(t, base+"/v1/changes?include_values=true&include_values=true").wantError(t, "include_values twice", http.StatusUnprocessableEntity, errs.CodeInvalid)
}

func (p valuesPage) eventIndex(t *testing.T, kind, key string) string {
	t.Helper()
	// The node's indexes are log indexes; read them off the value of the
	// last event of the key, which is current.
	for i := len(p.Events) - 1; i >= 0; i-- {
		e := p.Events[i]
		if e.Key == key && e.Value != nil {
			var n struct {
				Created  uint64 `json:"created_index"`
				Modified uint64 `json:"modified_index"`
			}
			if err := json.Unmarshal(e.Value, &n); err != nil {
				t.Fatal(err)
			}
			if kind == "node_create" {
				return fmt.Sprint(n.Created)
			}
			return fmt.Sprint(n.Modified)
		}
	}
	t.Fatalf("no value for %s", key)
	return ""
}

// Values are tenant-scoped as the events are: a principal sees only its
// tenants' events (the raw node events, with their values, only an admin).
func TestChangesValuesAreTenantScoped(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 1})
	u := c.URL(0)
	post := func(who, path string, body any) {
		t.Helper()
		if r := isoDo(t, isoClient, http.MethodPost, u+path, isoToken(who), body); r.status/100 != 2 {
			t.Fatalf("%s %s: %s", who, path, r)
		}
	}
	post("admin", "/v1/nodes/create", nodes.CreateRequest{NodeID: "secret", Properties: map[string]any{"k": "v"}})
	for _, tenant := range []string{"a", "b"} {
		post("admin", "/v1/capacity/cells", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: tenant,
			Cell: capacity.CellSpec{CellID: "cell-" + tenant, Capacities: map[string]uint64{"gpu": 1}}})
	}
	read := func(who string) valuesPage {
		var p valuesPage
		r := isoDo(t, isoClient, http.MethodGet, u+"/v1/changes?include_values=true", isoToken(who), nil)
		if r.status != 200 || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("changes as %s: %s", who, r)
		}
		return p
	}
	sawSecret := false
	for _, e := range read("admin").Events {
		sawSecret = sawSecret || e.Key == "secret" && strings.Contains(string(e.Value), `"k":"v"`)
	}
	if !sawSecret {
		t.Error("the admin does not see the node's value")
	}
	events := read("mem-a").Events
	if len(events) == 0 {
		t.Fatal("mem-a sees nothing of tenant a")
	}
	for _, e := range events {
		if e.Tenant != "a" || e.Key == "secret" || strings.Contains(string(e.Value), `"k"`) {
			t.Errorf("mem-a sees %+v", e)
		}
	}
}

// collect runs a Watch in the background and hands over what it yields.
func collect(ctx context.Context, it func(func(client.Event, error) bool)) (<-chan client.Event, <-chan error) {
	events, done := make(chan client.Event, 1024), make(chan error, 1)
	go func() {
		for ev, err := range it {
			if err != nil {
				done <- err
				return
			}
			events <- ev
		}
		done <- nil
	}()
	return events, done
}

// client's Follow yields every event once, in order, with values; it
// survives the node it reads from going away (moving to another address,
// resuming at its cursor) and ends with the context.
func TestFollowResumes(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: steadyTimings})
	leader := c.WaitLeader(10 * time.Second)
	f1, f2 := (leader+1)%3, (leader+2)%3
	nc := nodes.NewClient(c.Node(leader), c.Node(leader))
	start := feedLastSeq(t, apiBase(c, leader))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	api, err := client.New([]string{c.Node(f1).APIAddr(), c.Node(f2).APIAddr()}, client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	events, done := collect(ctx, api.Cluster().Follow(ctx, client.ChangesQuery{After: start, IncludeValues: true, Wait: 2 * time.Second, Limit: 3}))

	want := map[string]bool{}
	create := func(id string) {
		t.Helper()
		if _, err := nc.CreateIfAbsent(context.Background(), nodes.CreateRequest{NodeID: id, Properties: map[string]any{"id": id}}); err != nil {
			t.Fatal(err)
		}
		want[id] = true
	}
	var last uint64 = start
	await := func(n int) {
		t.Helper()
		for seen := 0; seen < n; {
			select {
			case ev := <-events:
				if ev.Seq <= last {
					t.Fatalf("event %d after %d: out of order or repeated", ev.Seq, last)
				}
				last = ev.Seq
				if ev.Kind == "node_create" {
					if !want[ev.Key] || !strings.Contains(string(ev.Value), `"id":"`+ev.Key+`"`) {
						t.Fatalf("unexpected or valueless event %+v", ev)
					}
					delete(want, ev.Key)
					seen++
				}
			case err := <-done:
				t.Fatalf("watch ended: %v", err)
			case <-ctx.Done():
				t.Fatalf("waiting for events: %v (still missing %v)", ctx.Err(), want)
			}
		}
	}
	for i := range 5 {
		create(fmt.Sprintf("w-%d", i))
	}
	await(5)
	// One of the two nodes the watch reads from goes away; it carries on
	// from the other without a gap.
	c.Stop(f1)
	for i := 5; i < 12; i++ {
		create(fmt.Sprintf("w-%d", i))
	}
	await(7)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("watch ended with %v, want the context's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
}

// A cursor the feed no longer holds ends client's Follow with a typed
// error that says where to resume; a refusal ends it too.
func TestFollowCursorExpired(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(_ int, cfg *cluster.Config) { cfg.ChangeFeedRetain = fsm.MinFeedRetain }})
	nc := nodes.NewClient(c.Node(0), c.Node(0))
	for i := range 3 * fsm.MinFeedRetain {
		if _, err := nc.CreateIfAbsent(context.Background(), nodes.CreateRequest{NodeID: fmt.Sprintf("x-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	api, err := client.New([]string{c.Node(0).APIAddr()}, client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	remote := api.Cluster()
	if !c.Eventually(10*time.Second, func() bool {
		return apiGet(t, apiBase(c, 0)+"/v1/changes?after=1").status == http.StatusGone
	}) {
		t.Fatal("the feed was not pruned")
	}
	var expired *client.CursorExpiredError
	for _, err := range remote.Follow(context.Background(), client.ChangesQuery{After: 1}) {
		if !errors.As(err, &expired) {
			t.Fatalf("the watch from cursor 1: %v, want cursor_expired", err)
		}
	}
	if !errors.Is(expired, errs.CursorExpired) || errs.CodeOf(expired) != errs.CodeCursorExpired || expired.After != 1 ||
		expired.FirstSeq <= 2 || expired.LastSeq < expired.FirstSeq {
		t.Fatalf("expired: %+v", expired)
	}
	// Resuming after LastSeq works.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, done := collect(ctx, remote.Follow(ctx, client.ChangesQuery{After: expired.LastSeq, Wait: time.Second}))
	if _, err := nc.CreateIfAbsent(context.Background(), nodes.CreateRequest{NodeID: "after-resync"}); err != nil {
		t.Fatal(err)
	}
	for found := false; !found; {
		select {
		case ev := <-events:
			found = ev.Key == "after-resync"
		case err := <-done:
			t.Fatalf("resumed watch ended: %v", err)
		}
	}
	cancel()

	// A refusal is final: a watch with a bad cursor ends with it.
	for _, err := range remote.Follow(context.Background(), client.ChangesQuery{After: 1 << 62}) {
		if errs.CodeOf(err) != errs.CodeInvalid {
			t.Fatalf("watch ahead of the feed: %v, want invalid", err)
		}
	}
}
