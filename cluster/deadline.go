package cluster

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// Request deadlines. A caller may bound any API request with the
// timeout_ms query parameter or a Request-Timeout header (milliseconds,
// or a Go duration such as "1.5s"), from 1 ms to MaxRequestTimeout; with
// both, the shorter counts. When it passes, the node gives up with 503
// unavailable and Retry-After (a write that may have reached the log
// says outcome_unknown: retry it with its idempotency key). Without one,
// a request waits at most Config.ApplyTimeout (10 s by default) for a
// leader, its write or its read. A node without a leader thus answers a
// request that asks for 200 ms in about 200 ms.

// MaxRequestTimeout bounds the deadline a request may ask for.
const MaxRequestTimeout = time.Minute

// RequestTimeoutHeader is the header that carries a request's deadline.
const RequestTimeoutHeader = "Request-Timeout"

// withRequestTimeout bounds r's context by the deadline r asks for, and
// takes timeout_ms out of the query (routes check their parameters
// strictly). The cancel func must be called.
func withRequestTimeout(r *http.Request) (*http.Request, context.CancelFunc, error) {
	d, ok, err := requestTimeout(r)
	if err != nil || !ok {
		return r, func() {}, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), d)
	r = r.WithContext(ctx)
	if r.URL.Query().Has("timeout_ms") {
		u := *r.URL
		q := u.Query()
		q.Del("timeout_ms")
		u.RawQuery = q.Encode()
		r.URL = &u
	}
	return r, cancel, nil
}

// requestTimeout parses the deadline r asks for; ok is false when it asks
// for none.
func requestTimeout(r *http.Request) (d time.Duration, ok bool, err error) {
	bad := func(what, v string) error {
		return errs.Errorf(errs.CodeInvalid, "%s %q: want 1 to %d milliseconds", what, v, MaxRequestTimeout.Milliseconds())
	}
	var query url.Values // Query() parses into a new map: most requests have no query
	if r.URL.RawQuery != "" {
		query = r.URL.Query()
	}
	if vs, has := query["timeout_ms"]; has {
		if len(vs) != 1 {
			return 0, false, errs.New(errs.CodeInvalid, "timeout_ms given more than once")
		}
		ms, perr := strconv.ParseInt(vs[0], 10, 64)
		if perr != nil || ms < 1 || ms > MaxRequestTimeout.Milliseconds() {
			return 0, false, bad("timeout_ms", vs[0])
		}
		d, ok = time.Duration(ms)*time.Millisecond, true
	}
	if v := strings.TrimSpace(r.Header.Get(RequestTimeoutHeader)); v != "" {
		h, perr := time.ParseDuration(v)
		if ms, ierr := strconv.ParseInt(v, 10, 64); ierr == nil {
			h, perr = time.Duration(min(max(ms, 0), MaxRequestTimeout.Milliseconds()+1))*time.Millisecond, nil
		}
		if perr != nil || h < time.Millisecond || h > MaxRequestTimeout {
			return 0, false, bad(RequestTimeoutHeader, v)
		}
		if !ok || h < d {
			d, ok = h, true
		}
	}
	return d, ok, nil
}
