package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// The one request path of every service: a call, described as data, is
// sent to the cluster's addresses within the call's deadline.
//
// Failover: an address that cannot be reached (the request was not
// written: connection refused, no connection in time) is left for the
// next one, for every call. Once a write was sent, a lost answer is an
// unknown outcome (errs.IsOutcomeUnknown) naming its idempotency key; a
// read is sent to the next address instead.

// Bounds of one call.
const (
	// MaxAttempts bounds the sends of one call across addresses (the
	// deadline bounds them too; WithMaxAttempts lowers it).
	MaxAttempts = 32
	// firstPause and maxPause: the wait after every address failed once,
	// doubling.
	firstPause = 50 * time.Millisecond
	maxPause   = time.Second
	// The server is given the deadline less marginShare of it (at most
	// maxMargin), so that its own 503 arrives before the client gives up.
	marginShare = 5 // one fifth
	maxMargin   = 500 * time.Millisecond
	// maxServerTimeout is the server's bound of Request-Timeout.
	maxServerTimeout = 60 * time.Second
	// maxReplyBytes bounds an answer read into memory (a page is far
	// smaller; current.json of a projection is at most a few MiB).
	maxReplyBytes = 32 << 20
)

// call is one request of the HTTP API and how to read its answer.
type call struct {
	method string
	path   string
	query  url.Values
	body   any // JSON-encoded when not nil
	// write marks a mutation: a lost answer after sending it is an
	// unknown outcome; a read goes to the next address instead.
	write bool
	// key is the idempotency key the request carries (in its body, or in
	// the Idempotency-Key header with keyHeader): what an unknown outcome
	// tells the caller to retry with.
	key       string
	keyHeader bool
	// repeatable marks a write without a key that names what it changes
	// (a fence, a sequence, an id): sending it again is safe and learns
	// its outcome.
	repeatable bool
	// extra adds to the deadline (a long poll's wait).
	extra time.Duration
}

// post is a write with a JSON body.
func post(path string, body any, key string) call {
	return call{method: http.MethodPost, path: path, body: body, write: true, key: key}
}

// repeat is a write without a key whose request identifies itself: a
// repeat of it after an unknown outcome is safe.
func repeat(method, path string, body any) call {
	return call{method: method, path: path, body: body, write: true, repeatable: true}
}

// get is a read with query parameters.
func get(path string, q url.Values) call {
	return call{method: http.MethodGet, path: path, query: q}
}

// postRead is a POST that changes nothing (a query with a JSON body):
// safe to send to another address when its answer is lost.
func postRead(path string, body any) call {
	return call{method: http.MethodPost, path: path, body: body}
}

// pathOf is "/v1/" and the segments, each escaped (a slug or an id may
// hold any character).
func pathOf(segments ...string) string {
	for i, s := range segments {
		segments[i] = url.PathEscape(s)
	}
	return "/v1/" + strings.Join(segments, "/")
}

// run sends cl and decodes a 2xx answer's JSON into out (nil: ignored).
func (c *Client) run(ctx context.Context, cl call, out any) error {
	_, body, err := c.exchange(ctx, cl)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return errs.Errorf(errs.CodeInternal, "%s %s: answer is not the JSON expected: %v", cl.method, cl.path, err)
	}
	return nil
}

// exchange sends cl within the call's deadline and returns a 2xx
// answer's status and body, or the call's error.
func (c *Client) exchange(ctx context.Context, cl call) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+cl.extra)
	defer cancel()
	var content []byte
	if cl.body != nil {
		var err error
		if content, err = json.Marshal(cl.body); err != nil {
			return 0, nil, errs.Errorf(errs.CodeInvalid, "%s %s: encode request: %v", cl.method, cl.path, err)
		}
	}
	n := len(c.bases)
	start := int(c.current.Load()) % n
	pause := firstPause
	var tried []string
	for attempt := 0; attempt < c.maxAttempts; attempt++ {
		if ctx.Err() != nil {
			break
		}
		index := (start + attempt) % n
		status, body, sent, err := c.send(ctx, c.bases[index], cl, content)
		if err == nil {
			c.current.Store(uint32(index))
			return c.interpret(cl, status, body)
		}
		if sent && cl.write {
			return 0, nil, cl.advise(errs.Unknown("%s %s to %s: the answer was lost (%v)",
				cl.method, cl.path, c.bases[index], err))
		}
		tried = append(tried, fmt.Sprintf("%s: %v", c.bases[index], err))
		if (attempt+1)%n == 0 && attempt+1 < c.maxAttempts { // every address failed once: pause before the next round
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
			pause = min(2*pause, maxPause)
		}
	}
	if len(tried) > n {
		tried = tried[len(tried)-n:] // the last round says enough
	}
	msg := fmt.Sprintf("%s %s: no node answered", cl.method, cl.path)
	if len(tried) > 0 {
		msg += " (" + strings.Join(tried, "; ") + ")"
	}
	if ctx.Err() != nil {
		msg += ": " + ctx.Err().Error()
	}
	return 0, nil, errs.New(errs.CodeUnavailable, msg)
}

// send makes one attempt at base. sent says whether the request was
// written (then the server may have acted on it) when err is not nil.
func (c *Client) send(ctx context.Context, base string, cl call, content []byte) (status int, body []byte, sent bool, err error) {
	u := base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	// The transport writes on its own goroutine: wrote is atomic.
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	})
	var rd io.Reader
	if content != nil {
		rd = bytes.NewReader(content)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, rd)
	if err != nil {
		return 0, nil, false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if content != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if cl.keyHeader && cl.key != "" {
		req.Header.Set("Idempotency-Key", cl.key)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set("Request-Timeout", serverTimeout(time.Until(dl)))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, wrote.Load(), err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return 0, nil, true, err
	}
	if len(body) > maxReplyBytes {
		return 0, nil, true, fmt.Errorf("answer of more than %d bytes", maxReplyBytes)
	}
	return resp.StatusCode, body, true, nil
}

// serverTimeout is the Request-Timeout (ms) to ask of the server when
// left is what remains of the call: a margin less, within the server's
// bounds.
func serverTimeout(left time.Duration) string {
	d := left - min(maxMargin, left/marginShare)
	d = min(max(d, time.Millisecond), maxServerTimeout)
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// interpret returns a 2xx answer, or its error.
func (c *Client) interpret(cl call, status int, body []byte) (int, []byte, error) {
	if status >= 200 && status < 300 {
		return status, body, nil
	}
	err := decodeError(status, body)
	if cl.write {
		err = cl.advise(err)
	}
	return status, nil, err
}

// advise adds to an unknown outcome of cl how to learn it: retry with
// its key (errs.AdviseRetry), or send the same request again when it
// identifies itself. Any other error is returned as it is.
func (cl call) advise(err error) error {
	if cl.key != "" || !cl.repeatable || !errs.IsOutcomeUnknown(err) {
		return errs.AdviseRetry(err, cl.key)
	}
	e := *errs.From(err)
	e.Message += "; the request names what it changes, so sending it again learns the outcome"
	return &e
}

// do runs cl and returns its answer decoded as a T (nil with the error).
func do[T any](ctx context.Context, c *Client, cl call) (*T, error) {
	var out T
	if err := c.run(ctx, cl, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
