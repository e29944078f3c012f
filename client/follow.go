package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// CursorExpiredError is Follow's error when the feed no longer holds the
// events after its cursor (they were pruned, or a backup restore replaced
// the state). The consumer must resync from a fresh read and follow again
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

// Follow yields every event of the change feed after q.After, once, in
// sequence order, for as long as ctx lasts and the loop wants more,
// long-polling q.Wait at a time (0: 20 s). Unlike a Watch's Events, it
// rides out a node that cannot be reached or answers unavailable or
// backpressure: it asks again, with backoff (through the client's next
// address), from the last event yielded, so nothing is skipped or
// repeated. It ends, yielding one error, when ctx ends (ctx's error),
// when the cursor expires (*CursorExpiredError), or on any other error
// (a refusal: unauthorized, forbidden, invalid).
//
// An event's Seq is the cursor to resume from: a consumer that records
// the last Seq it handled can Follow again after it, in this process or
// another.
func (s *Cluster) Follow(ctx context.Context, q ChangesQuery) iter.Seq2[Event, error] {
	if q.Wait == 0 {
		q.Wait = 20 * time.Second
	}
	return func(yield func(Event, error) bool) {
		// One Watch per turn, until it fails; the turns end with ctx.
		for attempt := 0; ; attempt++ {
			w := s.Watch(q, true)
			var failed error
			for ev, err := range w.Events(ctx) {
				if err != nil {
					failed = err
					break
				}
				attempt = 0
				if !yield(ev, nil) {
					return
				}
			}
			if ctx.Err() != nil {
				yield(Event{}, ctx.Err())
				return
			}
			var e *errs.Error
			switch {
			case failed == nil:
				return // (Events ends without an error only with ctx, above)
			case errors.As(failed, &e) && e.Code == errs.CodeCursorExpired:
				out := &CursorExpiredError{After: w.Cursor(), Err: e}
				out.FirstSeq, _ = detailUint(e.Detail["first_seq"])
				out.LastSeq, _ = detailUint(e.Detail["last_seq"])
				yield(Event{}, out)
				return
			case errors.As(failed, &e) && (e.Code == errs.CodeUnavailable || e.Code == errs.CodeBackpressure):
				// Reads change nothing: any failure to get an answer is
				// safe to try again, from where the last page ended.
				q.After = w.Cursor()
				if pause(ctx, followBackoff(attempt)) != nil {
					yield(Event{}, ctx.Err())
					return
				}
			default:
				yield(Event{}, failed)
				return
			}
		}
	}
}

// followBackoff grows from 10ms to 500ms.
func followBackoff(attempt int) time.Duration {
	return min(10*time.Millisecond<<min(attempt, 6), 500*time.Millisecond)
}

// pause waits d, or until ctx ends (its error).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// detailUint reads an unsigned integer from an error's detail, as the
// JSON decoder left it (a float64, or a json.Number).
func detailUint(v any) (uint64, bool) {
	switch n := v.(type) {
	case json.Number:
		u, err := strconv.ParseUint(string(n), 10, 64)
		return u, err == nil
	case float64:
		return uint64(n), n >= 0 && n == float64(uint64(n))
	}
	return 0, false
}
