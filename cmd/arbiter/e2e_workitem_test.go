//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/workitem"
)

// TestE2EWorkItems drives work-item admission on three `arbiter serve`
// processes over HTTP: a batch at its bound and its replay, refusals that
// consume no sequence, concurrent claims through every node (exactly one
// holder per item), then submits across a leader SIGKILL, retried under
// their keys; afterwards every acknowledged item is on every node with its
// sequence, each graph's sequences are 1..n, and the state hashes agree.
func TestE2EWorkItems(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := startE2ECluster(ctx, t)
	w := &wiE2E{t: t, cl: cl}

	// A batch of 128 through a follower, then its replay.
	leader, _ := cl.leader(ctx, nil)
	follower := cl.others(leader)[0]
	batch := workitem.BatchRequest{TenantRef: "e2e", GraphRef: "bound", IdempotencyKey: "bound-128"}
	for i := range workitem.MaxBatch {
		batch.Requests = append(batch.Requests, wiE2EItem(fmt.Sprintf("b%03d", i)))
	}
	var first, again workitem.BatchResult
	if st, err := w.post(ctx, follower, "submit-batch", batch, &first); err != nil || st != http.StatusCreated ||
		first.BatchSequenceRange != (workitem.SequenceRange{First: 1, Last: 128}) {
		t.Fatalf("batch of 128: %d %v %+v", st, err, first.BatchSequenceRange)
	}
	if st, err := w.post(ctx, leader, "submit-batch", batch, &again); err != nil || st != http.StatusOK || !again.Replayed ||
		again.BatchSequenceRange != first.BatchSequenceRange || again.Results[127].WorkItemID != "b127" {
		t.Fatalf("batch replay: %d %v %+v", st, err, again.BatchSequenceRange)
	}
	// Refusals consume nothing: the next admission takes sequence 129.
	over := batch
	over.IdempotencyKey, over.Requests = "bound-129", append(append([]workitem.SubmitRequest{}, batch.Requests...), wiE2EItem("b128"))
	for what, c := range map[string]struct {
		route  string
		body   any
		status int
		code   string
	}{
		"a batch of 129":       {"submit-batch", over, http.StatusUnprocessableEntity, "invalid"},
		"a missing dependency": {"submit", wiE2ESubmit("dep", "bound", "nowhere"), http.StatusUnprocessableEntity, "invalid"},
		"the in-flight cap":    {"submit", wiE2ECapped("cap", "bound", 128), http.StatusConflict, "exhausted"},
		"an id in use":         {"submit", func() workitem.SubmitRequest { r := wiE2ESubmit("dup", "bound"); r.WorkItemID = "b000"; return r }(), http.StatusConflict, "conflict"},
	} {
		st, err := w.post(ctx, follower, c.route, c.body, nil)
		var ae *e2eAPIError
		if !errors.As(err, &ae) || st != c.status || ae.Code != c.code {
			t.Errorf("%s: %d %v, want %d %s", what, st, err, c.status, c.code)
		}
	}
	var next workitem.SubmitResult
	if st, err := w.post(ctx, follower, "submit", wiE2ESubmit("after-refusals", "bound"), &next); err != nil || st != http.StatusCreated || next.CommandSequence != 129 {
		t.Fatalf("after the refusals: %d %v, sequence %d, want 129", st, err, next.CommandSequence)
	}

	// Concurrent claims through every node until none is left: each item
	// claimed once, at attempt 1, with fences never handed out twice.
	var mu sync.Mutex
	holders := map[string]int{}
	fences := map[uint64]string{}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			for {
				var c workitem.ClaimResult
				st, err := w.post(ctx, cl.nodes[g%len(cl.nodes)], "claim",
					workitem.ClaimRequest{TenantRef: "e2e", GraphRef: "bound", OwnerRef: fmt.Sprintf("g%d", g), TTLMs: 600_000}, &c)
				if st == http.StatusNotFound {
					return
				}
				if err != nil {
					t.Errorf("claim by g%d: %v", g, err)
					return
				}
				mu.Lock()
				holders[c.WorkItem.WorkItemID]++
				if other, dup := fences[c.Fence]; dup || c.Attempt != 1 {
					t.Errorf("claim of %s: attempt %d, fence %d (also %q's)", c.WorkItem.WorkItemID, c.Attempt, c.Fence, other)
				}
				fences[c.Fence] = c.WorkItem.WorkItemID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(holders) != 129 {
		t.Errorf("%d items claimed, want 129", len(holders))
	}
	for id, n := range holders {
		if n != 1 {
			t.Errorf("%s claimed %d times", id, n)
		}
	}

	// Submits across a leader SIGKILL, each retried under its key until
	// acknowledged (201, or 200 replayed after an unknown outcome).
	acked := w.submitAcrossKill(ctx)
	w.verify(ctx, map[string]map[string]uint64{"load": acked})
	e2eCompareStateHashes(ctx, t, cl)
}

type wiE2E struct {
	t  *testing.T
	cl *e2eCluster
}

func wiE2EItem(id string) workitem.SubmitRequest {
	return workitem.SubmitRequest{WorkItemID: id, CommandDigest: "sha256:" + strings.Repeat("e", 64), Kind: "e2e", InputRef: "in",
		PolicyDigest: "sha256:" + strings.Repeat("1", 64), CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64), MaxAttempts: 3, MaxTenantInFlight: workitem.MaxTenantInFlight}
}

func wiE2ESubmit(key, graph string, deps ...string) workitem.SubmitRequest {
	r := wiE2EItem("")
	r.TenantRef, r.GraphRef, r.IdempotencyKey, r.DependsOn = "e2e", graph, key, deps
	return r
}

func wiE2ECapped(key, graph string, cap int64) workitem.SubmitRequest {
	r := wiE2ESubmit(key, graph)
	r.MaxTenantInFlight = cap
	return r
}

// post sends in to /v1/workitems/<route> on n and decodes a 2xx answer
// into out; another answer is an *e2eAPIError. It returns the status.
func (w *wiE2E) post(ctx context.Context, n *e2eNode, route string, in, out any) (int, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	return w.do(ctx, http.MethodPost, n.url()+"/v1/workitems/"+route, b, out)
}

func (w *wiE2E) do(ctx context.Context, method, u string, body []byte, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, e2eCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.cl.c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		var env struct {
			Error *e2eAPIError `json:"error"`
		}
		if json.Unmarshal(raw, &env) != nil || env.Error == nil {
			return resp.StatusCode, &e2eAPIError{Status: resp.StatusCode, Message: string(raw)}
		}
		env.Error.Status = resp.StatusCode
		return resp.StatusCode, env.Error
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(raw, out)
	}
	return resp.StatusCode, nil
}

// submitAcrossKill runs 4 writers submitting new items (graph "load")
// through the survivors, SIGKILLs the leader once they have 40 acks,
// goes on until 40 more, restarts the killed node, and returns every
// acknowledged item's sequence by id.
func (w *wiE2E) submitAcrossKill(ctx context.Context) map[string]uint64 {
	t, cl := w.t, w.cl
	leader, term := cl.leader(ctx, nil)
	survivors := cl.others(leader)
	var mu sync.Mutex
	acked := map[string]uint64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for wr := range 4 {
		wg.Go(func() {
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("load-%d-%03d", wr, seq)
				res, err := w.submitRetrying(ctx, e2eRotate(survivors, wr+seq), wiE2ESubmit(key, "load"))
				if err != nil {
					t.Errorf("submit %s: %v", key, err)
					return
				}
				mu.Lock()
				acked[res.WorkItemID] = res.CommandSequence
				mu.Unlock()
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	cl.eventually(ctx, 30*time.Second, "40 submits before the kill", func() (bool, string) { return count() >= 40, fmt.Sprint(count()) })
	leader.signal(t, syscall.SIGKILL)
	leader.waitExit(10 * time.Second)
	before := count()
	newLeader, newTerm := cl.leader(ctx, leader)
	t.Logf("killed leader %s (term %d) after %d acknowledged submits; %s leads in term %d", leader.id, term, before, newLeader.id, newTerm)
	cl.eventually(ctx, 30*time.Second, "40 submits after the election", func() (bool, string) { return count() >= before+40, fmt.Sprint(count()) })
	close(stop)
	wg.Wait()
	e2eRestartAndCatchUp(ctx, t, cl, leader)
	return acked
}

// submitRetrying submits r, rotating through nodes, until it is
// acknowledged; an unknown outcome is retried under the same key, which
// replays it if it was applied.
func (w *wiE2E) submitRetrying(ctx context.Context, nodes []*e2eNode, r workitem.SubmitRequest) (*workitem.SubmitResult, error) {
	ctx, cancel := context.WithTimeout(ctx, e2eWriteBound)
	defer cancel()
	for attempt := 0; ; attempt++ {
		var res workitem.SubmitResult
		_, err := w.post(ctx, nodes[attempt%len(nodes)], "submit", r, &res)
		if err == nil {
			return &res, nil
		}
		if !e2eRetryable(err) || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(min(25*time.Millisecond<<min(attempt, 4), 400*time.Millisecond))
	}
}

// verify lists each graph on every node (stale reads: each node's own
// state) and requires sequences 1..n and every acknowledged item at its
// sequence.
func (w *wiE2E) verify(ctx context.Context, want map[string]map[string]uint64) {
	t, cl := w.t, w.cl
	for graph, acked := range want {
		for _, n := range cl.nodes {
			cl.eventually(ctx, 15*time.Second, fmt.Sprintf("%s holds every acknowledged item of %s", n.id, graph), func() (bool, string) {
				got := map[string]uint64{}
				after := ""
				for {
					q := url.Values{"tenant_ref": {"e2e"}, "graph_ref": {graph}, "consistency": {"stale"}}
					if after != "" {
						q.Set("after", after)
					}
					var page workitem.ListResult
					if _, err := w.do(ctx, http.MethodGet, n.url()+"/v1/workitems/list?"+q.Encode(), nil, &page); err != nil {
						return false, err.Error()
					}
					for _, it := range page.WorkItems {
						if it.CommandSequence != uint64(len(got)+1) {
							t.Fatalf("%s: graph %s: item %d has sequence %d (allocated twice or skipped)", n.id, graph, len(got)+1, it.CommandSequence)
						}
						got[it.WorkItemID] = it.CommandSequence
					}
					if after = page.NextCursor; after == "" {
						break
					}
				}
				for id, seq := range acked {
					if got[id] != seq {
						return false, fmt.Sprintf("%s at %d, want %d", id, got[id], seq)
					}
				}
				return true, ""
			})
		}
		t.Logf("graph %s: %d acknowledged items on every node", graph, len(acked))
	}
}
