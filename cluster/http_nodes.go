package cluster

import (
	"context"
	"net/http"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
)

// The node-primitive read routes and the change feed. The write routes are
// jsonRoute over the typed client (see routes).

func (n *Node) nodes() *nodes.Client { return nodes.NewClient(n, n) }

func (n *Node) handleGetNode(w http.ResponseWriter, r *http.Request) {
	p, c, err := readQuery(r, "node_id")
	if err != nil {
		writeError(w, err)
		return
	}
	node, err := n.nodes().Get(r.Context(), p["node_id"], c)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, node)
}

func (n *Node) handleNodesByLabel(w http.ResponseWriter, r *http.Request) {
	p, c, err := readQuery(r, "label", "after", "limit")
	if err != nil {
		writeError(w, err)
		return
	}
	limit, err := intParam("limit", p["limit"], 1, nodes.MaxLabelPage)
	if err != nil {
		writeError(w, err)
		return
	}
	page, err := n.nodes().ByLabel(r.Context(), nodes.LabelQuery{Label: p["label"], After: p["after"], Limit: limit}, c)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// handleChanges pages the change feed after a sequence. With wait_ms and
// nothing new, it waits (at most maxLongPoll) for the next applied batch.
func (n *Node) handleChanges(w http.ResponseWriter, r *http.Request) {
	p, c, err := readQuery(r, "after", "limit", "wait_ms")
	if err != nil {
		writeError(w, err)
		return
	}
	after, err := intParam("after", p["after"], 0, int(^uint(0)>>1))
	if err != nil {
		writeError(w, err)
		return
	}
	limit, err := intParam("limit", p["limit"], 1, fsm.MaxChangesPage)
	if err != nil {
		writeError(w, err)
		return
	}
	waitMs, err := intParam("wait_ms", p["wait_ms"], 0, int(maxLongPoll/time.Millisecond))
	if err != nil {
		writeError(w, err)
		return
	}
	req := fsm.ChangesRequest{After: uint64(after), Limit: limit}
	// A long poll must answer before the server's write timeout cuts it.
	wait := min(time.Duration(waitMs)*time.Millisecond, n.cfg.WriteTimeout-time.Second)
	ctx, cancel := context.WithTimeout(r.Context(), max(wait, 0))
	defer cancel()
	for {
		changed := n.fsm.Changed()
		var page fsm.ChangesPage
		if err := fsm.Ask(r.Context(), n, fsm.QueryChanges, c == fsm.Stale, req, &page); err != nil {
			writeError(w, err)
			return
		}
		// Answer at once when there is something to show or the cursor
		// moved (past events of other tenants); wait only when nothing
		// happened at all.
		if len(page.Events) > 0 || page.Next != req.After || waitMs == 0 {
			writeJSON(w, http.StatusOK, page)
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			writeJSON(w, http.StatusOK, page)
			return
		}
	}
}
