//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/projection"
)

// e2eProj calls the projection API of node n as an independent client
// would: JSON in, status and JSON out.
func e2eProj(ctx context.Context, t *testing.T, cl *e2eCluster, n *e2eNode, method, path string, in, out any) (int, string) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, e2eCallTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, n.url()+path, body)
	resp, err := cl.c.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.id, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if resp.StatusCode/100 != 2 {
		_ = json.Unmarshal(raw, &e)
		return resp.StatusCode, e.Error.Code
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, ""
}

// TestE2EProjection runs three `arbiter serve` processes, each with its
// own runtime root, and checks from an independent client: acquire before
// lease_ttl_ms is configured fails loudly; after a takeover the stale
// holder's publish is refused and no node's current.json changes; readers
// of current.json on every node see only whole publications; a node
// restarted with an older file catches up and never goes back.
func TestE2EProjection(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	base := t.TempDir()
	for _, id := range []string{"n1", "n2", "n3"} {
		if err := os.Mkdir(filepath.Join(base, id), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cl := startE2ECluster(ctx, t, "--projection-root", filepath.Join(base, "{node}"))
	n1, n2, n3 := cl.nodes[0], cl.nodes[1], cl.nodes[2]
	file := func(n *e2eNode, id string) []byte {
		path, _ := projection.TargetPath(filepath.Join(base, n.id), id)
		b, _ := os.ReadFile(path)
		return b
	}

	// Open development mode: the client is trusted and names the agent.
	var target projection.TargetResult
	treq := projection.TargetRequest{AgentID: "agent-7", Attested: projection.Attested{SchemaVersion: "1", Capability: "hooks", HarnessType: "e2e",
		ProjectionKind: "lane", InstanceKeyDigest: "sha256:" + strings.Repeat("1", 64), WorkspaceKeyDigest: "sha256:" + strings.Repeat("2", 64)},
		Channels: []projection.ChannelBinding{{Channel: projection.ChannelComputedRoute, Producer: "router"}}}
	if st, code := e2eProj(ctx, t, cl, n2, http.MethodPost, "/v1/projection/targets", treq, &target); st != 201 {
		t.Fatalf("register: %d %s", st, code)
	}
	id := target.TargetID
	acquire := func(n *e2eNode, holder string) (projection.Lease, int, string) {
		var l projection.Lease
		st, code := e2eProj(ctx, t, cl, n, http.MethodPost, "/v1/projection/leases/acquire",
			projection.AcquireRequest{TargetID: id, HolderInstanceDigest: "sha256:" + strings.Repeat(holder, 64)}, &l)
		return l, st, code
	}
	if _, st, code := acquire(n3, "a"); st != 503 || code != "unavailable" {
		t.Fatalf("acquire before lease_ttl_ms is configured: %d %s, want 503 unavailable", st, code)
	}
	const ttl = 1500
	if st, code := e2eProj(ctx, t, cl, n1, http.MethodPut, "/v1/projection/config", projection.ConfigRequest{LeaseTTLMs: ttl}, nil); st != 200 {
		t.Fatalf("config: %d %s", st, code)
	}
	w := uint64(0)
	submit := func() {
		w++
		env := fmt.Sprintf(`{"schema":"computed-route.v1","not_authority":true,"watermark":%d,"expires_at_ms":%d,"provenance":{},"citations":[],"body":%q}`,
			w, time.Now().Add(time.Hour).UnixMilli(), strings.Repeat("r", int(w*997%20000)))
		if st, code := e2eProj(ctx, t, cl, n1, http.MethodPost, "/v1/projection/channels/submit",
			projection.SubmitRequest{TargetID: id, Channel: projection.ChannelComputedRoute, SourceWatermark: w, Envelope: json.RawMessage(env)}, nil); st != 200 {
			t.Fatalf("submit %d: %d %s", w, st, code)
		}
	}
	publish := func(n *e2eNode, l projection.Lease) (projection.PublishResult, int, string) {
		var p projection.PublishResult
		st, code := e2eProj(ctx, t, cl, n, http.MethodPost, "/v1/projection/publish",
			projection.FenceRequest{TargetID: id, Token: l.Token, FencingEpoch: l.FencingEpoch}, &p)
		return p, st, code
	}
	current := func() []byte {
		var raw json.RawMessage
		if st, code := e2eProj(ctx, t, cl, n2, http.MethodGet, "/v1/projection/targets/"+id+"/current", nil, &raw); st != 200 {
			t.Fatalf("current: %d %s", st, code)
		}
		return raw
	}
	sameOnAll := func(want []byte) {
		cl.eventually(ctx, 10*time.Second, "current.json on every node", func() (bool, string) {
			for _, n := range cl.nodes {
				if !bytes.Equal(file(n, id), want) {
					return false, fmt.Sprintf("%s: %s", n.id, file(n, id))
				}
			}
			return true, ""
		})
	}

	// Takeover after expiry: the stale holder's publish changes nothing.
	submit()
	stale, st, code := acquire(n1, "a")
	if st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	if _, st, code := acquire(n2, "b"); st != 409 || code != "conflict" {
		t.Fatalf("acquire of a held target: %d %s", st, code)
	}
	time.Sleep(ttl*time.Millisecond + 200*time.Millisecond)
	fresh, st, code := acquire(n2, "b")
	if st != 200 || fresh.FencingEpoch <= stale.FencingEpoch {
		t.Fatalf("takeover: %d %s %+v", st, code, fresh)
	}
	if _, st, code := publish(n2, fresh); st != 200 {
		t.Fatalf("publish: %d %s", st, code)
	}
	after := current()
	sameOnAll(after)
	for _, n := range cl.nodes {
		if _, st, code := publish(n, stale); st != 409 || code != "stale_fence" {
			t.Fatalf("the stale holder's publish through %s: %d %s, want 409 stale_fence", n.id, st, code)
		}
		if st, code := e2eProj(ctx, t, cl, n, http.MethodPost, "/v1/projection/leases/release",
			projection.FenceRequest{TargetID: id, Token: stale.Token, FencingEpoch: stale.FencingEpoch}, nil); st != 409 || code != "stale_fence" {
			t.Fatalf("the stale holder's release through %s: %d %s", n.id, st, code)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, n := range cl.nodes {
		if !bytes.Equal(file(n, id), after) {
			t.Fatalf("%s's current.json changed after the stale holder's publish: %s", n.id, file(n, id))
		}
	}

	// Readers on every node while publications follow one another, and
	// n3 restarted with an older file in the middle.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	for _, n := range cl.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for !stop.Load() {
				time.Sleep(time.Millisecond)
				b := file(n, id)
				if b == nil {
					continue
				}
				p, err := projection.ParsePublication(b)
				mu.Lock()
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("%s: torn: %v", n.id, err))
				case p.PublicationSeq < last:
					problems = append(problems, fmt.Sprintf("%s: publication %d after %d", n.id, p.PublicationSeq, last))
				}
				mu.Unlock()
				if err == nil {
					last = p.PublicationSeq
				}
			}
		}()
	}
	cycle := func(n *e2eNode) {
		t.Helper()
		submit()
		l, st, code := acquire(n, "c")
		if st != 200 {
			t.Fatalf("acquire: %d %s", st, code)
		}
		if _, st, code := publish(n, l); st != 200 {
			t.Fatalf("publish: %d %s", st, code)
		}
	}
	for k := 0; k < 20; k++ {
		cycle(cl.nodes[k%2])
	}
	n3.signal(t, syscall.SIGTERM)
	if n3.waitExit(20*time.Second) == nil {
		t.Fatal("n3 did not exit on SIGTERM")
	}
	older := file(n3, id)
	for k := 0; k < 10; k++ {
		cycle(cl.nodes[k%2])
	}
	if !bytes.Equal(file(n3, id), older) {
		t.Fatal("a stopped node's file changed")
	}
	n3.start(t, cl.bin)
	cl.waitReady(ctx, n3, 20*time.Second)
	latest := current()
	sameOnAll(latest)
	stop.Store(true)
	wg.Wait()
	if len(problems) > 0 {
		t.Fatalf("readers saw %d problems: %v", len(problems), problems[:min(5, len(problems))])
	}
	if bytes.Equal(older, latest) {
		t.Fatal("n3 restarted with the newest file: the test did not test catching up")
	}

	// No success without the file: with n1's runtime root moved away, a
	// publish through n1 is refused before it consumes the lease; through
	// n2 it succeeds, and says n2 wrote its file; n1 retries its failed
	// write on its own once the root is back.
	root1 := filepath.Join(base, n1.id)
	if err := os.Rename(root1, root1+".away"); err != nil {
		t.Fatal(err)
	}
	submit()
	l, st, code := acquire(n1, "d")
	if st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	if _, st, code := publish(n1, l); st != 503 || code != "unavailable" {
		t.Fatalf("publish through n1 with its root moved away: %d %s, want 503 unavailable", st, code)
	}
	if p, st, code := publish(n2, l); st != 200 || p.File != projection.FileWritten {
		t.Fatalf("publish through n2 under the lease n1's refusal left held: %d %s %+v", st, code, p)
	}
	if err := os.Rename(root1+".away", root1); err != nil {
		t.Fatal(err)
	}
	sameOnAll(current())
	cl.eventually(ctx, 10*time.Second, "n1 counts its retries", func() (bool, string) {
		resp, err := cl.c.hc.Get(n1.url() + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return bytes.Contains(raw, []byte("\narbiter_fsm_effects_failing 0\n")) && !bytes.Contains(raw, []byte("\narbiter_fsm_effect_retries_total 0\n")), "no retry counted"
	})
}
