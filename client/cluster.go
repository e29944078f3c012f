package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// Bounds of one change-feed request (the server's).
const (
	MaxWait = 30 * time.Second
	MaxPage = 1024
)

// Cluster is the cluster itself: status, capabilities, members,
// readiness, who the caller is, and the change feed (/v1/changes).
type Cluster struct{ c *Client }

// Status returns the answering node's view: leader, term, indexes,
// members, enabled commands, storage, effects.
func (s *Cluster) Status(ctx context.Context) (*Status, error) {
	return do[Status](ctx, s.c, get("/v1/cluster/status", nil))
}

// Capabilities returns what the cluster enables and what the answering
// node's binary serves.
func (s *Cluster) Capabilities(ctx context.Context, cons Consistency) (*CapabilitiesResult, error) {
	return do[CapabilitiesResult](ctx, s.c, get("/v1/cluster/capabilities", params("consistency", string(cons))))
}

// Members returns the members: id, raft and API address, voter, what
// each serves.
func (s *Cluster) Members(ctx context.Context) ([]MemberStatus, error) {
	st, err := s.Status(ctx)
	if err != nil {
		return nil, err
	}
	return st.Members, nil
}

// Whoami returns the principal the caller's credential names and its
// OwnerDigest (what capacity's OwnerDigest must be).
func (s *Cluster) Whoami(ctx context.Context) (*Whoami, error) {
	return do[Whoami](ctx, s.c, get("/v1/auth/whoami", nil))
}

// Ready is /readyz's answer when a node is ready.
type Ready struct {
	Status   string `json:"status"`
	LeaderID string `json:"leader_id"`
}

// Ready asks a node's /readyz (the first that answers): nil error when
// it knows a leader, has caught up and has not halted, and the cluster
// enables every command require names ("capacity.acquire",
// "workitem.submit@2", or a whole domain: "projection"). Otherwise
// errs.Unavailable saying why (Detail["missing"] lists the commands the
// cluster does not enable: an incompatible deployment), or errs.Invalid
// for a malformed name.
func (s *Cluster) Ready(ctx context.Context, require ...string) (*Ready, error) {
	return do[Ready](ctx, s.c, get("/readyz", readyParams(require)))
}

func readyParams(require []string) url.Values {
	return params("require", strings.Join(require, ","))
}

// EndpointHealth is one address's readiness, as `arbiter endpoint
// health` reports it.
type EndpointHealth struct {
	Endpoint string
	Healthy  bool
	Took     time.Duration
	// Err is why it is not healthy (nil when it is).
	Err error
}

// Health asks every address of the client, one after another, whether
// it is ready (as Ready, with require); each answer within the client's
// per-call timeout.
func (s *Cluster) Health(ctx context.Context, require ...string) []EndpointHealth {
	cl := get("/readyz", readyParams(require))
	out := make([]EndpointHealth, 0, len(s.c.bases))
	for _, base := range s.c.bases {
		start := time.Now()
		err := s.c.one(ctx, base, cl)
		out = append(out, EndpointHealth{Endpoint: base, Healthy: err == nil, Took: time.Since(start), Err: err})
	}
	return out
}

// one sends cl to base alone, within the per-call timeout.
func (c *Client) one(ctx context.Context, base string, cl call) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	status, body, _, err := c.send(ctx, base, cl, nil)
	if err != nil {
		return errs.Errorf(errs.CodeUnavailable, "%s: %v", base, err)
	}
	_, _, err = c.interpret(cl, status, body)
	return err
}

// ChangesQuery asks for one page of the change feed: at most Limit
// events (1..1024; 0: the server's default) after sequence After; with
// Wait (at most MaxWait) the server holds an empty page that long for a
// change.
type ChangesQuery struct {
	After         uint64
	Limit         int
	Wait          time.Duration
	IncludeValues bool
	Consistency   Consistency
}

// Changes returns one page of the change feed. A pruned cursor is
// errs.CursorExpired (Detail["last_seq"]: where to resume after
// resyncing).
func (s *Cluster) Changes(ctx context.Context, q ChangesQuery) (*ChangesPage, error) {
	if q.Limit < 0 || q.Limit > MaxPage || q.Wait < 0 || q.Wait > MaxWait {
		return nil, errs.Errorf(errs.CodeInvalid, "limit must be 0..%d and wait 0..%s", MaxPage, MaxWait)
	}
	cl := get("/v1/changes", params("after", strconv.FormatUint(q.After, 10), "limit", num(q.Limit),
		"wait_ms", num(int(q.Wait/time.Millisecond)), "include_values", flag(q.IncludeValues),
		"consistency", string(q.Consistency)))
	cl.extra = q.Wait // a long poll may take its wait on top of the call's timeout
	return do[ChangesPage](ctx, s.c, cl)
}

// Watch follows the change feed from a cursor (Watch).
type Watch struct {
	s      *Cluster
	q      ChangesQuery
	follow bool
}

// Watch returns a follower of the change feed after sequence q.After,
// reading pages of q.Limit events. With follow, its Events long-poll
// q.Wait at a time (0: 10 s) for new changes until the caller stops;
// without, they end at the feed's end.
func (s *Cluster) Watch(q ChangesQuery, follow bool) *Watch {
	if follow && q.Wait == 0 {
		q.Wait = 10 * time.Second
	}
	if !follow {
		q.Wait = 0
	}
	return &Watch{s: s, q: q, follow: follow}
}

// Cursor is the sequence after which the next page starts: where a
// later Watch resumes. It moves when a page is done or the caller stops
// (read it after the loop over Events).
func (w *Watch) Cursor() uint64 { return w.q.After }

// Events yields every committed change after the cursor, in order, one
// bounded page at a time; the cursor moves past each page as it is
// yielded. It ends when the caller stops (break), when ctx ends, at the
// feed's end without follow, or at the first error (yielded, with a zero
// Event; the cursor stays where the failed page began).
func (w *Watch) Events(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for ctx.Err() == nil { // one bounded page per turn
			page, err := w.s.Changes(ctx, w.q)
			if err != nil {
				yield(Event{}, err)
				return
			}
			before := w.q.After
			for i, ev := range page.Events {
				if !yield(ev, nil) {
					w.q.After = ev.Seq // resume after the last event yielded
					if i == len(page.Events)-1 {
						w.q.After = page.Next // past what the page skipped, too
					}
					return
				}
			}
			w.q.After = page.Next
			// Without follow, the end is reached once the cursor caught
			// up with the feed (or stopped moving: nothing more this
			// caller may see).
			if !w.follow && (page.Next >= page.LastSeq || page.Next == before) {
				return
			}
		}
	}
}
