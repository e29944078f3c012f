package cluster

import (
	"context"
	"net/http"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
)

// maxLongPoll bounds how long a change-feed request may wait.
const maxLongPoll = 30 * time.Second

// handleChanges pages the change feed after a sequence. With wait_ms and
// nothing new, it waits (at most maxLongPoll) for the next applied batch.
// With include_values=true, events carry the values they wrote (see
// fsm.ChangesRequest.Values).
func (hs *httpAPI) handleChanges(w http.ResponseWriter, r *http.Request) {
	p, err := domain.ParseParams(r, "after", "limit", "wait_ms", "consistency", "include_values")
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	c, err := p.Consistency()
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	after, err := p.Uint("after")
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	limit, err := p.Int("limit", 1, fsm.MaxChangesPage)
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	waitMs, err := p.Int("wait_ms", 0, int(maxLongPoll/time.Millisecond))
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	values, err := p.Bool("include_values")
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	req := fsm.ChangesRequest{After: after, Limit: limit, Values: values}
	// A long poll must answer before the server's write timeout cuts it.
	wait := min(time.Duration(waitMs)*time.Millisecond, hs.cfg.WriteTimeout-time.Second)
	ctx, cancel := context.WithTimeout(r.Context(), max(wait, 0))
	defer cancel()
	for {
		changed := hs.fsm.Changed()
		var page fsm.ChangesPage
		if err := fsm.Ask(r.Context(), hs.node, fsm.QueryChanges, c == fsm.Stale, req, &page); err != nil {
			domain.WriteError(w, err)
			return
		}
		// Answer at once when there is something to show or the cursor
		// moved (past events of other tenants); wait only when nothing
		// happened at all.
		if len(page.Events) > 0 || page.Next != req.After || waitMs == 0 {
			domain.WriteJSON(w, http.StatusOK, page)
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			domain.WriteJSON(w, http.StatusOK, page)
			return
		}
	}
}
