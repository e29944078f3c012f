package cluster

import (
	"context"
	"net/http"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

// A follower forwards the commands it receives to the leader in batches:
// each of a few senders takes one waiting command plus whatever else is
// queued, and sends them in one request; the leader hands them all to raft
// before waiting for any, so they share a group commit. Under load this
// divides the forwarding cost by the batch size; when idle a command goes
// out alone at once.

const (
	forwardSenders       = 4
	forwardQueueLen      = 1024
	maxForwardBatch      = 64
	maxForwardBatchBytes = 4 << 20
	// maxApplyBatchBody bounds the body of /v1/internal/apply.
	maxApplyBatchBody = 2*maxForwardBatchBytes + arblog.MaxCommandBytes
)

type forwarder struct {
	n     *Node
	queue chan *forwardCall
}

type forwardCall struct {
	ctx  context.Context
	api  string
	data []byte // the encoded command
	done chan forwardResult
}

type forwardResult struct {
	res *fsm.Response
	err error
}

// applyBatch is the body of /v1/internal/apply; applyBatchReply answers
// each command in order.
type applyBatch struct {
	Commands [][]byte `msgpack:"cmds"`
}

type applyBatchReply struct {
	Replies []wireReply `msgpack:"replies"`
}

func newForwarder(n *Node) *forwarder {
	return &forwarder{n: n, queue: make(chan *forwardCall, forwardQueueLen)}
}

func (fw *forwarder) start() {
	for i := 0; i < forwardSenders; i++ {
		fw.n.goBackground(fw.loop)
	}
}

// submit forwards cmd to the leader at api and waits for its outcome.
func (fw *forwarder) submit(ctx context.Context, api string, cmd arblog.Command) (*fsm.Response, error) {
	data, err := arblog.Encode(cmd)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode command: %v", err)
	}
	call := &forwardCall{ctx: ctx, api: api, data: data, done: make(chan forwardResult, 1)}
	select {
	case fw.queue <- call:
	case <-ctx.Done():
		return nil, errs.New(errs.CodeUnavailable, "forwarding queue full until the deadline")
	}
	select {
	case r := <-call.done:
		return r.res, r.err
	case <-ctx.Done():
		return nil, errs.Unknown("gave up waiting for the leader's answer: %v", ctx.Err())
	}
}

func (fw *forwarder) loop() {
	for {
		select {
		case first := <-fw.queue:
			batch, size := []*forwardCall{first}, len(first.data)
		drain:
			for len(batch) < maxForwardBatch && size < maxForwardBatchBytes {
				select {
				case c := <-fw.queue:
					batch, size = append(batch, c), size+len(c.data)
				default:
					break drain
				}
			}
			fw.send(batch)
		case <-fw.n.ctx.Done():
			return
		}
	}
}

// send posts each leader's share of batch (normally all of it) and
// delivers every outcome.
func (fw *forwarder) send(batch []*forwardCall) {
	byAPI := map[string][]*forwardCall{}
	var order []string
	for _, c := range batch {
		if c.ctx.Err() != nil {
			c.done <- forwardResult{err: errs.New(errs.CodeUnavailable, "deadline passed before forwarding")}
			continue
		}
		if _, seen := byAPI[c.api]; !seen {
			order = append(order, c.api)
		}
		byAPI[c.api] = append(byAPI[c.api], c)
	}
	for _, api := range order {
		fw.sendTo(api, byAPI[api])
	}
}

func (fw *forwarder) sendTo(api string, calls []*forwardCall) {
	deadline := time.Now().Add(fw.n.cfg.ApplyTimeout)
	body := applyBatch{Commands: make([][]byte, len(calls))}
	for i, c := range calls {
		body.Commands[i] = c.data
		if dl, ok := c.ctx.Deadline(); ok && dl.After(deadline) {
			deadline = dl
		}
	}
	ctx, cancel := context.WithDeadline(fw.n.ctx, deadline)
	defer cancel()
	var reply applyBatchReply
	err := fw.post(ctx, api, body, &reply)
	if err == nil && len(reply.Replies) != len(calls) {
		err = errs.Unknown("leader %s answered %d of %d commands", api, len(reply.Replies), len(calls))
	}
	for i, c := range calls {
		switch {
		case err != nil:
			c.done <- forwardResult{err: err}
		case reply.Replies[i].Err != nil:
			c.done <- forwardResult{err: reply.Replies[i].Err}
		case reply.Replies[i].Response == nil:
			c.done <- forwardResult{err: errs.Unknown("leader %s sent an empty reply", api)}
		default:
			c.done <- forwardResult{res: reply.Replies[i].Response}
		}
	}
}

func (fw *forwarder) post(ctx context.Context, api string, body applyBatch, reply *applyBatchReply) error {
	raw, err := arblog.Marshal(body)
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "encode batch: %v", err)
	}
	var wire wireReply
	if err := postMsgpack(ctx, fw.n.peers, fw.n.url(api, "/v1/internal/apply"), raw, &wire); err != nil {
		return err
	}
	if wire.Err != nil {
		return wire.Err
	}
	if err := arblog.Unmarshal(wire.Result, reply); err != nil {
		return errs.Unknown("leader %s: undecodable batch reply: %v", api, err)
	}
	return nil
}

// handleInternalApply receives a batch of commands forwarded by another
// node. It applies only on the leader and never forwards again, so a stale
// leader hint cannot make a request loop; the sender retries elsewhere.
func (n *Node) handleInternalApply(w http.ResponseWriter, r *http.Request) {
	raw, err := domain.ReadBody(w, r, maxApplyBatchBody)
	if err != nil {
		domain.WriteError(w, err)
		return
	}
	var batch applyBatch
	if err := arblog.Unmarshal(raw, &batch); err != nil {
		writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInvalid, "%v", err)})
		return
	}
	if len(batch.Commands) == 0 || len(batch.Commands) > maxForwardBatch {
		writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInvalid, "a batch holds 1 to %d commands", maxForwardBatch)})
		return
	}
	if !n.IsLeader() {
		writeMsgpack(w, wireReply{Err: errs.New(errs.CodeUnavailable, "not the leader")})
		return
	}
	ctx, cancel := n.withTimeout(r.Context())
	defer cancel()
	started := make([]pendingApply, len(batch.Commands))
	for i, data := range batch.Commands {
		cmd, err := arblog.Decode(data)
		switch {
		case err != nil:
			started[i].err = errs.Errorf(errs.CodeInvalid, "%v", err)
		case n.fsm.IsInternal(cmd.Type):
			started[i].err = errs.Errorf(errs.CodeForbidden, "command type %d is internal to the cluster", cmd.Type)
		default:
			started[i] = n.startApply(ctx, cmd)
		}
	}
	reply := applyBatchReply{Replies: make([]wireReply, len(started))}
	for i, p := range started {
		res, err := n.finishApply(ctx, p)
		reply.Replies[i] = wireReply{Response: res, Err: errs.From(err)}
	}
	out, err := arblog.Marshal(reply)
	if err != nil {
		writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInternal, "encode batch reply: %v", err)})
		return
	}
	writeMsgpack(w, wireReply{Result: out})
}
