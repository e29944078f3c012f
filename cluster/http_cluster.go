package cluster

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

func (hs *httpAPI) handleStatus(w http.ResponseWriter, r *http.Request) {
	domain.WriteJSON(w, http.StatusOK, hs.node.Status())
}

// maxStateHashWait bounds how long a state-hash request waits for the
// index it names.
const maxStateHashWait = 10 * time.Second

// handleStateHash answers the state, content and per-table hashes of the
// current state (stateHashReply); or, with ?index=N, the hashes of the state as of exactly index N, waiting up to
// maxStateHashWait for it. Replicas keep applying ticks while a large
// state is hashed, so comparing replicas needs the index form; 409 means
// N was applied inside a larger batch or had passed: ask for a later one.
func (hs *httpAPI) handleStateHash(w http.ResponseWriter, r *http.Request) {
	p, err := domain.ParseParams(r, "index")
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	if p.String("index") == "" {
		idx, sums, err := hs.fsm.StateHashes()
		if err != nil {
			domain.WriteError(w, errs.Errorf(errs.CodeInternal, "state hash: %v", err))
			return
		}
		domain.WriteJSON(w, http.StatusOK, newStateHashReply(idx, sums))
		return
	}
	index, err := strconv.ParseUint(p.String("index"), 10, 64)
	if err != nil {
		domain.WriteError(w, errs.Errorf(errs.CodeInvalid, "index must be a decimal log index"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), maxStateHashWait)
	defer cancel()
	sums, ok, err := hs.fsm.StateHashesAt(ctx, index)
	switch {
	case err != nil:
		domain.WriteError(w, err)
	case !ok:
		domain.WriteError(w, errs.Errorf(errs.CodeConflict, "the state at index %d was never visible on its own (applied in a batch, or passed); ask for a later index", index))
	default:
		domain.WriteJSON(w, http.StatusOK, newStateHashReply(index, sums))
	}
}

func (hs *httpAPI) handleJoin(w http.ResponseWriter, r *http.Request) {
	var req JoinRequest
	if err := domain.DecodeJSON(w, r, &req); err != nil {
		domain.WriteError(w, err)
		return
	}
	if err := hs.node.Join(r.Context(), req); err != nil {
		domain.WriteError(w, err)
		return
	}
	domain.WriteJSON(w, http.StatusOK, map[string]bool{"joined": true})
}

func (hs *httpAPI) handleRemove(w http.ResponseWriter, r *http.Request) {
	var req RemoveRequest
	if err := domain.DecodeJSON(w, r, &req); err != nil {
		domain.WriteError(w, err)
		return
	}
	if err := hs.node.Remove(r.Context(), req); err != nil {
		domain.WriteError(w, err)
		return
	}
	domain.WriteJSON(w, http.StatusOK, map[string]bool{"removed": true})
}

func (hs *httpAPI) handleTransfer(w http.ResponseWriter, r *http.Request) {
	var req TransferRequest
	if err := domain.DecodeJSON(w, r, &req); err != nil {
		domain.WriteError(w, err)
		return
	}
	res, err := hs.node.TransferLeadership(r.Context(), req)
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	domain.WriteJSON(w, http.StatusOK, res)
}

// handleCommand is the raw client's (internal/rawremote) write path: any command a client may propose,
// run as the request's principal (any principal in the body is ignored).
func (hs *httpAPI) handleCommand(w http.ResponseWriter, r *http.Request) {
	body, err := domain.ReadBody(w, r, arblog.MaxCommandBytes)
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	cmd, err := clientCommand(body)
	if err != nil {
		writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInvalid, "%v", err)})
		return
	}
	res, err := hs.node.Propose(r.Context(), cmd)
	writeMsgpack(w, wireReply{Response: res, Err: errs.From(err)})
}

// clientCommand decodes a client's command from body, which the handler
// owns and nothing changes: its payload shares body's bytes (DecodeView)
// rather than a copy of them (an allocation per command; issue 42), since
// nothing keeps it past the call (a proposal encodes the command anew).
func clientCommand(body []byte) (arblog.Command, error) {
	cmd, err := arblog.DecodeView(body)
	cmd.Adapter = "" // a client cannot speak as an in-server adapter
	return cmd, err
}

// handleQuery is the raw client's read path.
func (hs *httpAPI) handleQuery(w http.ResponseWriter, r *http.Request) {
	body, err := domain.ReadBody(w, r, arblog.MaxCommandBytes)
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	var q fsm.Query
	if err := arblog.Unmarshal(body, &q); err != nil {
		writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInvalid, "%v", err)})
		return
	}
	q.Adapter = "" // a client cannot speak as an in-server adapter
	out, err := hs.node.Query(r.Context(), q)
	writeMsgpack(w, wireReply{Result: out, Err: errs.From(err)})
}

// handleInternalQuery serves a linearizable read forwarded by a follower.
func (hs *httpAPI) handleInternalQuery(w http.ResponseWriter, r *http.Request) {
	body, err := domain.ReadBody(w, r, arblog.MaxCommandBytes)
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	var q wireQuery
	if err := arblog.Unmarshal(body, &q); err != nil {
		writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInvalid, "%v", err)})
		return
	}
	creds, err := credentialsFrom(r.Header, 1)
	if err != nil {
		writeMsgpack(w, wireReply{Err: errs.From(err)})
		return
	}
	if creds != nil {
		q.Principal.Cred = creds[0] // fsm.Query checks it (see credentials.go)
	}
	if !hs.isLeader() {
		writeMsgpack(w, wireReply{Err: errs.New(errs.CodeUnavailable, "not the leader")})
		return
	}
	ctx, cancel := hs.withTimeout(r.Context())
	defer cancel()
	if err := hs.host.linearize(ctx); err != nil {
		writeMsgpack(w, wireReply{Err: errs.From(err)})
		return
	}
	out, err := hs.fsm.Query(q.Principal, q.Query)
	writeMsgpack(w, wireReply{Result: out, Err: errs.From(err)})
}

func (hs *httpAPI) handleHealthz(w http.ResponseWriter, r *http.Request) {
	domain.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz is 200 when the node is ready (Node.Ready), given the
// commands ?require= lists (comma-separated; see requirement), else 503
// saying why (422 for a malformed list).
func (hs *httpAPI) handleReadyz(w http.ResponseWriter, r *http.Request) {
	p, err := domain.ParseParams(r, "require")
	if err == nil {
		err = hs.node.Ready(p.String("require"))
	}
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	_, leader := hs.raft.LeaderWithID()
	domain.WriteJSON(w, http.StatusOK, map[string]any{"status": "ready", "leader_id": leader})
}
