package cluster

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/rawwire"
	arblog "github.com/arbiterhq/arbiter/log"
)

// A follower forwards the commands it receives to the leader in batches.
// One dispatcher collects them per leader and keeps one batch in flight to
// each: what arrives while a batch is out waits and goes in the next one,
// so under load a batch holds about what arrives in one commit's time,
// and when idle a command goes out alone at once. The leader hands a
// batch to raft before waiting for any of it, so it shares a group
// commit. Fewer, larger batches cost less on both sides: against four
// senders each taking whatever was queued, this spent 0.90x to 0.95x the
// servers' CPU per create at 64 clients (BENCHMARKS.md, "Forwarding").
// More batches go out to a leader together only while a full batch is
// waiting (a follower with more load than one batch per commit carries),
// up to forwardSenders. A batch stuck on a leader that no longer answers
// holds up only that leader's calls: those for a new leader go at once.

const (
	forwardSenders       = 4
	forwardQueueLen      = 1024
	maxForwardBatch      = 64
	maxForwardBatchBytes = 4 << 20
	// maxApplyBatchBody bounds the body of /v1/internal/apply.
	maxApplyBatchBody = 2*maxForwardBatchBytes + arblog.MaxCommandBytes
)

type forwarder struct {
	n     *core
	queue chan *forwardCall
	// sent receives a leader's API address from each batch's sender when
	// its answer has been delivered.
	sent chan string
}

type forwardCall struct {
	ctx  context.Context
	api  string
	data []byte // the encoded command
	cred string // its principal's credential, sent beside it (credentials.go)
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

func newForwarder(c *core) *forwarder {
	return &forwarder{n: c, queue: make(chan *forwardCall, forwardQueueLen), sent: make(chan string)}
}

func (fw *forwarder) start() {
	fw.n.goBackground(fw.dispatch)
}

// submit forwards cmd to the leader at api and waits for its outcome.
func (fw *forwarder) submit(ctx context.Context, api string, cmd arblog.Command) (*fsm.Response, error) {
	data, err := arblog.Encode(cmd)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode command: %v", err)
	}
	call := forwardCalls.Get().(*forwardCall)
	call.ctx, call.api, call.data, call.cred = ctx, api, data, cmd.Principal.Cred
	select {
	case fw.queue <- call:
	case <-ctx.Done():
		call.release()
		return nil, errs.New(errs.CodeUnavailable, "forwarding queue full until the deadline")
	}
	select {
	case r := <-call.done:
		call.release()
		return r.res, r.err
	case <-ctx.Done():
		// Not released: its answer is still to come, on call.done.
		return nil, errs.Unknown("gave up waiting for the leader's answer: %v", ctx.Err())
	}
}

// forwardCalls keeps calls and their channels for reuse (two allocations
// per forwarded command; issue 42). A call is released only once its
// answer has been received, or when it never reached the queue: whoever
// answers a call (sendTo, take, refuseAll) sends on done as the last
// thing it does with it.
var forwardCalls = sync.Pool{New: func() any { return &forwardCall{done: make(chan forwardResult, 1)} }}

// release hands c, whose done is empty, back to forwardCalls.
func (c *forwardCall) release() {
	c.ctx, c.api, c.data, c.cred = nil, "", nil, ""
	forwardCalls.Put(c)
}

// lane is what the dispatcher holds for one leader: the calls waiting
// for a batch, and how many batches are out.
type lane struct {
	waiting  []*forwardCall
	inFlight int
}

// dispatch takes calls off the queue into their leader's lane and sends
// batches (see the top of the file). It holds at most forwardQueueLen
// waiting calls, then stops taking more, so that the queue fills and
// submit answers "queue full" at its deadline. Lanes are dropped when
// empty, so there are never more than the leaders with calls out.
func (fw *forwarder) dispatch() {
	lanes := map[string]*lane{}
	held := 0
	for {
		queue := fw.queue
		if held >= forwardQueueLen {
			queue = nil // full: leave the rest in the queue
		}
		select {
		case c := <-queue:
			l := lanes[c.api]
			if l == nil {
				l = &lane{}
				lanes[c.api] = l
			}
			l.waiting = append(l.waiting, c)
			held++
		case api := <-fw.sent:
			lanes[api].inFlight--
		case <-fw.n.ctx.Done():
			fw.refuseAll(lanes)
			return
		}
		for api, l := range lanes {
			for len(l.waiting) > 0 && (l.inFlight == 0 || (len(l.waiting) >= maxForwardBatch && l.inFlight < forwardSenders)) {
				batch, removed := fw.take(l)
				held -= removed
				if len(batch) == 0 {
					continue // every call taken had passed its deadline
				}
				l.inFlight++
				fw.n.goBackground(func() {
					fw.sendTo(api, batch)
					select {
					case fw.sent <- api:
					case <-fw.n.ctx.Done():
					}
				})
			}
			if len(l.waiting) == 0 && l.inFlight == 0 {
				delete(lanes, api)
			}
		}
	}
}

// refuseAll answers every call it holds or finds queued, none of them
// sent, when the node stops.
func (fw *forwarder) refuseAll(lanes map[string]*lane) {
	refuse := func(c *forwardCall) {
		c.done <- forwardResult{err: errs.New(errs.CodeUnavailable, "node stopped before forwarding")}
	}
	for _, l := range lanes {
		for _, c := range l.waiting {
			refuse(c)
		}
	}
	for range forwardQueueLen {
		select {
		case c := <-fw.queue:
			refuse(c)
		default:
			return
		}
	}
}

// take removes the next batch from l's waiting calls, within the batch
// bounds, and answers how many calls it removed: those in the batch and
// those it answered instead of sending because their deadline had passed.
func (fw *forwarder) take(l *lane) (batch []*forwardCall, removed int) {
	size := 0
	for removed < len(l.waiting) && len(batch) < maxForwardBatch && (len(batch) == 0 || size+len(l.waiting[removed].data) <= maxForwardBatchBytes) {
		c := l.waiting[removed]
		removed++
		if c.ctx.Err() != nil {
			c.done <- forwardResult{err: errs.New(errs.CodeUnavailable, "deadline passed before forwarding")}
			continue
		}
		batch, size = append(batch, c), size+len(c.data)
	}
	rest := copy(l.waiting, l.waiting[removed:])
	clear(l.waiting[rest:])
	l.waiting = l.waiting[:rest]
	return batch, removed
}

func (fw *forwarder) sendTo(api string, calls []*forwardCall) {
	deadline := time.Now().Add(fw.n.cfg.ApplyTimeout)
	body := applyBatch{Commands: make([][]byte, len(calls))}
	var creds []string // only when a command names one: open mode names none
	for i, c := range calls {
		body.Commands[i] = c.data
		if c.cred != "" && creds == nil {
			creds = make([]string, len(calls))
		}
		if creds != nil {
			creds[i] = c.cred
		}
		if dl, ok := c.ctx.Deadline(); ok && dl.After(deadline) {
			deadline = dl
		}
	}
	ctx, cancel := context.WithDeadline(fw.n.ctx, deadline)
	defer cancel()
	var reply applyBatchReply
	err := fw.post(ctx, api, body, credentialsHeaderOf(creds), &reply)
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

func (fw *forwarder) post(ctx context.Context, api string, body applyBatch, header http.Header, reply *applyBatchReply) error {
	raw, err := arblog.Marshal(body)
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "encode batch: %v", err)
	}
	var wire wireReply
	if err := rawwire.PostMsgpackWith(ctx, fw.n.peers, fw.n.url(api, "/v1/internal/apply"), raw, header, &wire); err != nil {
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
func (hs *httpAPI) handleInternalApply(w http.ResponseWriter, r *http.Request) {
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
	creds, err := credentialsFrom(r.Header, len(batch.Commands))
	if err != nil {
		writeMsgpack(w, wireReply{Err: errs.From(err)})
		return
	}
	if !hs.isLeader() {
		writeMsgpack(w, wireReply{Err: errs.New(errs.CodeUnavailable, "not the leader")})
		return
	}
	ctx, cancel := hs.withTimeout(r.Context())
	defer cancel()
	started := make([]pendingApply, len(batch.Commands))
	for i, data := range batch.Commands {
		cmd, err := arblog.Decode(data)
		if err == nil && creds != nil {
			cmd.Principal.Cred = creds[i]
		}
		switch {
		case err != nil:
			started[i].err = errs.Errorf(errs.CodeInvalid, "%v", err)
		case hs.fsm.IsInternal(cmd.Type):
			started[i].err = errs.Errorf(errs.CodeForbidden, "command type %d is internal to the cluster", cmd.Type)
		default:
			if started[i].err = hs.checkForwardedCredential(ctx, cmd.Principal); started[i].err == nil {
				started[i] = hs.host.startApply(ctx, cmd)
			}
		}
	}
	reply := applyBatchReply{Replies: make([]wireReply, len(started))}
	for i, p := range started {
		res, err := hs.host.finishApply(ctx, p)
		reply.Replies[i] = wireReply{Response: res, Err: errs.From(err)}
	}
	out, err := arblog.Marshal(reply)
	if err != nil {
		writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInternal, "encode batch reply: %v", err)})
		return
	}
	writeMsgpack(w, wireReply{Result: out})
}
