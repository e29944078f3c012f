package rawremote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// maxLongPoll is the longest wait a change-feed request may ask for (the
// node's bound).
const maxLongPoll = 30 * time.Second

// WatchOption shapes Remote.Watch.
type WatchOption func(*watchConfig)

type watchConfig struct {
	values bool
	limit  int
	wait   time.Duration
	stale  bool
}

// WatchValues makes every event carry the value it wrote, where its
// domain gives one (/v1/changes?include_values=true; see fsm.Event).
func WatchValues() WatchOption { return func(c *watchConfig) { c.values = true } }

// WatchPageSize sets how many events one request may return (1 to
// fsm.MaxChangesPage; default fsm.MaxChangesPage).
func WatchPageSize(n int) WatchOption { return func(c *watchConfig) { c.limit = n } }

// WatchWait sets how long one request waits for new events before it
// asks again (default 20 s; at most 30 s).
func WatchWait(d time.Duration) WatchOption { return func(c *watchConfig) { c.wait = d } }

// WatchStale reads the feed of whichever node answers without going to
// the leader: cheaper, possibly behind, and a cursor from one node's feed
// is only good on a node as far along.
func WatchStale() WatchOption { return func(c *watchConfig) { c.stale = true } }

// CursorExpiredError is Watch's error when the feed no longer holds the
// events after its cursor (they were pruned, or a backup restore replaced
// the state). The consumer must resync from a fresh read and watch again
// after LastSeq. errors.Is(err, errs.CursorExpired) holds.
type CursorExpiredError struct {
	// After is the cursor that expired.
	After uint64
	// FirstSeq is the oldest event the feed holds; LastSeq the newest,
	// after which to resume once resynced.
	FirstSeq, LastSeq uint64
	// Err is the server's error.
	Err *errs.Error
}

func (e *CursorExpiredError) Error() string {
	return fmt.Sprintf("cursor %d expired (the feed holds %d..%d; resync, then watch after %d): %v", e.After, e.FirstSeq, e.LastSeq, e.LastSeq, e.Err)
}

// Unwrap makes the server's error (code cursor_expired) reachable by
// errors.Is and errors.As.
func (e *CursorExpiredError) Unwrap() error { return e.Err }

// Watch follows the change feed after the sequence after: it pages with
// long polls and yields each event in sequence order, once, for as long
// as ctx lasts and the loop wants more. A node that cannot be reached,
// or that answers unavailable or backpressure, is retried (with backoff,
// moving through the remote's addresses) from the last event yielded, so
// nothing is skipped or repeated. It ends, yielding one error, when ctx
// ends (ctx's error), when the cursor expires (*CursorExpiredError), or
// on any other error (a refusal: unauthorized, forbidden, invalid).
//
// An event's Seq is the cursor to resume from: a consumer that records
// the last Seq it handled can call Watch again after it, in this process
// or another.
//
//	for ev, err := range remote.Watch(ctx, last, rawremote.WatchValues()) {
//		if err != nil { ... }
//		handle(ev); last = ev.Seq
//	}
func (r *Remote) Watch(ctx context.Context, after uint64, opts ...WatchOption) iter.Seq2[fsm.Event, error] {
	cfg := watchConfig{limit: fsm.MaxChangesPage, wait: 20 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.limit = min(max(cfg.limit, 1), fsm.MaxChangesPage)
	cfg.wait = min(max(cfg.wait, 0), maxLongPoll)
	return func(yield func(fsm.Event, error) bool) {
		cursor := after
		for attempt := 0; ; {
			page, err := r.changesPage(ctx, cursor, cfg)
			if ctx.Err() != nil {
				yield(fsm.Event{}, ctx.Err())
				return
			}
			if err != nil {
				var e *errs.Error
				switch {
				case errors.As(err, &e) && e.Code == errs.CodeCursorExpired:
					yield(fsm.Event{}, cursorExpired(cursor, e))
					return
				case errors.As(err, &e) && (e.Code == errs.CodeUnavailable || e.Code == errs.CodeBackpressure):
					// Reads change nothing: any failure to get an answer
					// is safe to try again.
					if sleepCtx(ctx, backoff(attempt)) != nil {
						yield(fsm.Event{}, ctx.Err())
						return
					}
					attempt++
					continue
				default:
					yield(fsm.Event{}, err)
					return
				}
			}
			attempt = 0
			if page.Next < cursor {
				yield(fsm.Event{}, errs.Errorf(errs.CodeInternal, "the feed answered cursor %d after %d", page.Next, cursor))
				return
			}
			for _, ev := range page.Events {
				if ev.Seq <= cursor {
					continue // never twice, whatever a node answers
				}
				cursor = ev.Seq
				if !yield(ev, nil) {
					return
				}
			}
			cursor = max(cursor, page.Next)
		}
	}
}

// changesPage asks one node for the page after cursor, long-polling.
func (r *Remote) changesPage(ctx context.Context, cursor uint64, cfg watchConfig) (*fsm.ChangesPage, error) {
	q := url.Values{
		"after":   {strconv.FormatUint(cursor, 10)},
		"limit":   {strconv.Itoa(cfg.limit)},
		"wait_ms": {strconv.FormatInt(cfg.wait.Milliseconds(), 10)},
	}
	if cfg.values {
		q.Set("include_values", "true")
	}
	if cfg.stale {
		q.Set("consistency", "stale")
	}
	// The node answers within the wait (or its write timeout); allow for
	// the leader's confirmation and the transfer on top.
	ctx, cancel := context.WithTimeout(ctx, cfg.wait+15*time.Second)
	defer cancel()
	var page fsm.ChangesPage
	if err := r.CallJSON(ctx, http.MethodGet, "/v1/changes?"+q.Encode(), nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

func cursorExpired(after uint64, e *errs.Error) *CursorExpiredError {
	out := &CursorExpiredError{After: after, Err: e}
	out.FirstSeq, _ = detailUint(e.Detail["first_seq"])
	out.LastSeq, _ = detailUint(e.Detail["last_seq"])
	return out
}

// detailUint reads an unsigned integer from an error's detail, as a JSON
// answer (json.Number) or a msgpack reply (an integer type) carries it.
func detailUint(v any) (uint64, bool) {
	switch n := v.(type) {
	case json.Number:
		u, err := strconv.ParseUint(string(n), 10, 64)
		return u, err == nil
	case uint64:
		return n, true
	case int64:
		return uint64(n), n >= 0
	}
	return 0, false
}

// backoff grows from 10ms to 500ms.
func backoff(attempt int) time.Duration {
	d := 10 * time.Millisecond << min(attempt, 6)
	return min(d, 500*time.Millisecond)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
