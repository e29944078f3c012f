package main

// The crash loop's growing state. The writers of crashloop_test.go keep
// the state the same size, so a restarted node always restores it far
// faster than the leader writes the trailing logs. What issue 39 found
// was the opposite: with about 100,000 records a restarted follower
// installed snapshot after snapshot and never caught up. So alongside the
// writers, growers create new nodes that are never overwritten, each with
// a value of crashGrowBytes, up to crashGrowMax of them: the state, the
// snapshots and the time to restore them grow for as long as the loop
// runs. At the end every node must list, through its own state, every
// grown node whose create was acknowledged, and none that nobody sent.
//
// ARBITER_CRASH_GROW sets how many nodes the growers create at most
// (default crashGrowCI, a few MB in the bounded CI run; a soak can set
// 100000 or more), ARBITER_CRASH_GROW_BYTES the bytes of each value.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	crashGrowers     = 2
	crashGrowCI      = 2000
	crashGrowBytesCI = 1024
	crashGrowLabel   = "crash-grow"
)

// crashGrowth is what the growers sent and what became of it. Each
// grower owns the ids it makes (its index in the name), so only the
// final check reads across growers, after they stopped.
type crashGrowth struct {
	max, bytes int
	value      string
	mu         sync.Mutex
	next       int             // the next id's number, across growers
	acked      map[string]bool // creates acknowledged (created, or replayed as created)
	unknown    map[string]bool // creates of unknown outcome, or found made by an earlier attempt
}

// newCrashGrowth reads the growth's bounds from the environment.
func newCrashGrowth(t *testing.T) *crashGrowth {
	g := &crashGrowth{max: crashGrowCI, bytes: crashGrowBytesCI, acked: map[string]bool{}, unknown: map[string]bool{}}
	for name, dst := range map[string]*int{"ARBITER_CRASH_GROW": &g.max, "ARBITER_CRASH_GROW_BYTES": &g.bytes} {
		if s := os.Getenv(name); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || (name == "ARBITER_CRASH_GROW_BYTES" && (v < 1 || v > 60000)) {
				t.Fatalf("%s=%q: want a count (bytes: 1..60000)", name, s)
			}
			*dst = v
		}
	}
	g.value = strings.Repeat("g", g.bytes)
	return g
}

// take hands out the next id to create, or false once max were.
func (g *crashGrowth) take() (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next >= g.max {
		return "", false
	}
	g.next++
	return fmt.Sprintf("crash-grow-%07d", g.next-1), true
}

func (g *crashGrowth) record(id string, acked bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if acked {
		g.acked[id] = true
	} else {
		g.unknown[id] = true
	}
}

// grow creates new nodes until halt, or until the growth's max is made.
// The idempotency key is the id, so a retry of an unknown outcome inside
// crashPost replays the first result.
func (cr *crashRun) grow(ctx context.Context, w int, halt <-chan struct{}) {
	for i := 0; ctx.Err() == nil; i++ {
		select {
		case <-halt:
			return
		default:
		}
		id, ok := cr.growth.take()
		if !ok {
			return
		}
		var res e2eCreateReply
		req := e2eCreateReq{NodeID: id, Labels: []string{crashGrowLabel}, IdempotencyKey: id,
			Properties: map[string]any{"value": cr.growth.value}}
		err := crashPost(ctx, cr.cl.c, e2eRotate(cr.cl.nodes, w+i), "/v1/nodes/create", req, &res)
		switch {
		case err == nil && res.Created:
			cr.growth.record(id, true)
		case err == nil:
			// Not created, yet nobody else writes this id: an earlier
			// attempt made it and its ledger row was evicted.
			cr.growth.record(id, false)
		default:
			if !e2eRetryable(err) {
				cr.t.Errorf("grow %s: non-retryable error: %v", id, err)
			}
			cr.growth.record(id, false)
		}
	}
}

// verifyGrowth lists the grown nodes on every node, from its own state
// (the nodes have settled: each applied the leader's last index): every
// acknowledged create must be there, and nothing nobody sent.
func (cr *crashRun) verifyGrowth(ctx context.Context) {
	g := cr.growth
	for _, n := range cr.cl.nodes {
		seen := map[string]bool{}
		after := ""
		for pages := 0; ; pages++ {
			if pages > g.max/128+2 { // every page holds 128 but the last
				cr.violation("listing the grown nodes on %s did not end after %d pages", n.id, pages)
				return
			}
			var page struct {
				Nodes []struct {
					NodeID string `json:"node_id"`
				} `json:"nodes"`
				NextCursor string `json:"next_cursor"`
			}
			u := n.url() + "/v1/nodes/by-label?consistency=stale&limit=128&label=" + crashGrowLabel + "&after=" + url.QueryEscape(after)
			if err := cr.cl.c.call(ctx, "GET", u, nil, &page); err != nil {
				cr.violation("listing the grown nodes on %s: %v", n.id, err)
				return
			}
			for _, r := range page.Nodes {
				seen[r.NodeID] = true
				if !g.acked[r.NodeID] && !g.unknown[r.NodeID] {
					cr.violation("%s holds grown node %s, which no grower sent", n.id, r.NodeID)
				}
			}
			if page.NextCursor == "" {
				break
			}
			after = page.NextCursor
		}
		for id := range g.acked {
			if !seen[id] {
				cr.violation("LOST: %s does not hold grown node %s, whose create was acknowledged", n.id, id)
			}
		}
		cr.t.Logf("%s holds %d grown nodes of %d bytes (%d acknowledged, %d of unknown outcome)", n.id, len(seen), g.bytes, len(g.acked), len(g.unknown))
	}
}
