//go:build unix

package main

// The allocation end-to-end test's HTTP calls. The shared e2eAPIClient.call
// decodes 200 replies only; allocation answers 201, 409 and 422 with
// bodies the test compares, so these keep every status and raw body.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// e2eReply is one HTTP answer: its status and raw body.
type e2eReply struct {
	status int
	body   []byte
}

func (r e2eReply) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// raw sends body (JSON, when not nil) to u with the Idempotency-Key key
// (when not empty) and returns the answer, whatever its status; an error
// is a transport failure.
func (c *e2eAPIClient) raw(ctx context.Context, method, u string, body any, key string) (e2eReply, error) {
	ctx, cancel := context.WithTimeout(ctx, e2eCallTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return e2eReply{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return e2eReply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return e2eReply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return e2eReply{}, err
	}
	return e2eReply{status: resp.StatusCode, body: raw}, nil
}

// e2eUnsettled reports whether an answer leaves the request's outcome
// open: a transport failure, 503 (no leader, or an unknown outcome) or
// 429 (backpressure).
func e2eUnsettled(r e2eReply, err error) bool {
	return err != nil || r.status == http.StatusServiceUnavailable || r.status == http.StatusTooManyRequests
}

// allocDo sends a request through nodes, rotating and retrying while its
// outcome is open (25 ms doubling to 400 ms) for at most e2eWriteBound,
// and fails t if it never settles. Only for requests a retry cannot
// duplicate: reads, puts, and writes carrying an Idempotency-Key.
func (cl *e2eCluster) allocDo(ctx context.Context, nodes []*e2eNode, method, path string, body any, key string) e2eReply {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, e2eWriteBound)
	defer cancel()
	for attempt := 0; ; attempt++ {
		r, err := cl.c.raw(ctx, method, nodes[attempt%len(nodes)].url()+path, body, key)
		if !e2eUnsettled(r, err) {
			return r
		}
		select {
		case <-time.After(min(25*time.Millisecond<<min(attempt, 4), 400*time.Millisecond)):
		case <-ctx.Done():
			cl.t.Fatalf("%s %s: no settled answer within %v: %v %v", method, path, e2eWriteBound, r, err)
		}
	}
}

// e2eDecodeReply decodes r's body into v, failing t if r is not status.
func e2eDecodeReply(t *testing.T, what string, r e2eReply, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %v, want %d", what, r, status)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("%s: %v: %v", what, r, err)
		}
	}
}

// e2eParsed is a JSON body parsed into plain values, for comparisons
// that ignore formatting and key order.
func e2eParsed(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %s: %v", raw, err)
	}
	return v
}

// e2eSameJSON reports whether two JSON bodies hold the same value.
func e2eSameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(e2eParsed(t, a), e2eParsed(t, b))
}

// e2eWantBody requires r to be status with a body equal, once parsed, to
// want (itself JSON text).
func e2eWantBody(t *testing.T, what string, r e2eReply, status int, want string) {
	t.Helper()
	if r.status != status || !e2eSameJSON(t, r.body, []byte(want)) {
		t.Errorf("%s: %v\nwant %d %s", what, r, status, want)
	}
}

// e2eErrorCode is the code of a standard error envelope ("" if none).
func e2eErrorCode(r e2eReply) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &env) != nil {
		return ""
	}
	return env.Error.Code
}
