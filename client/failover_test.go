package client_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

// deadAddr is an address where nothing listens (connection refused).
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	must(t, ln.Close())
	return "http://" + addr
}

// TestFailover: with the first address dead, every call, writes
// included (they were never sent there), succeeds on the next.
func TestFailover(t *testing.T) {
	ctx := ctxOf(t)
	c := newClientAt(t, append([]string{deadAddr(t)}, shared.URL(1)))
	id := unique(t)
	res, err := c.Nodes().Create(ctx, client.CreateRequest{NodeID: id})
	must(t, err)
	if !res.Created {
		t.Fatalf("create through the second address: %+v", res)
	}
	node, err := c.Nodes().Get(ctx, id, client.Linearizable)
	must(t, err)
	if node.NodeID != id {
		t.Fatalf("get: %+v", node)
	}

	// No address answers: unavailable, and nothing was sent.
	none := newClientAt(t, []string{deadAddr(t), deadAddr(t)}, client.WithTimeout(500*time.Millisecond))
	_, err = none.Nodes().Create(ctx, client.CreateRequest{NodeID: unique(t)})
	wantCode(t, err, errs.CodeUnavailable)
	if errs.IsOutcomeUnknown(err) {
		t.Fatalf("a write never sent has a known outcome: %v", err)
	}
}

// TestMaxAttempts: WithMaxAttempts(1) asks each address once, so a node
// that cannot be reached is reported at once, not retried until the
// call's timeout; out-of-range values are refused.
func TestMaxAttempts(t *testing.T) {
	ctx := ctxOf(t)
	once := newClientAt(t, []string{deadAddr(t)}, client.WithTimeout(5*time.Second), client.WithMaxAttempts(1))
	start := time.Now()
	_, err := once.Cluster().Status(ctx)
	wantCode(t, err, errs.CodeUnavailable)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("one attempt at a dead address took %v", took)
	}
	for _, n := range []int{0, 33} {
		if _, err := client.New([]string{"http://127.0.0.1:1"}, client.WithMaxAttempts(n)); err == nil {
			t.Fatalf("WithMaxAttempts(%d) accepted", n)
		}
	}
}

// TestLostAnswer: a node that takes a request and drops the connection.
// A read goes on to the next address; a write's outcome is unknown, and
// the error names its idempotency key to retry with.
func TestLostAnswer(t *testing.T) {
	ctx := ctxOf(t)
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(drop.Close)
	c := newClientAt(t, []string{drop.URL, shared.URL(2)})
	_, err := c.Cluster().Status(ctx)
	must(t, err) // the read went on to the next address...
	c = newClientAt(t, []string{drop.URL, shared.URL(2)})
	_, err = c.Nodes().Create(ctx, client.CreateRequest{NodeID: unique(t), IdempotencyKey: "lost-1"})
	if !errs.IsOutcomeUnknown(err) || !errors.Is(err, errs.Unavailable) {
		t.Fatalf("a write whose answer was lost: %v", err) // ...a write may have been applied
	}
	if key := errs.From(err).Detail["idempotency_key"]; key != "lost-1" {
		t.Fatalf("the unknown outcome names key %v", key)
	}
}

func newClientAt(t *testing.T, addrs []string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(addrs, append([]client.Option{client.WithToken(tokens["ops"])}, opts...)...)
	must(t, err)
	t.Cleanup(c.Close)
	return c
}
