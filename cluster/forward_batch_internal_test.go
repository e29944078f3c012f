package cluster

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

// fakeLeader answers /v1/internal/apply as a leader would, one response
// per command, after gate lets the request through (nil: at once). It
// records each batch's size and how many requests were in it at once.
type fakeLeader struct {
	srv  *httptest.Server
	gate chan struct{}

	mu          sync.Mutex
	sizes       []int
	inFlight    int
	maxInFlight int
}

func newFakeLeader(t *testing.T, gated bool) *fakeLeader {
	f := &fakeLeader{}
	if gated {
		f.gate = make(chan struct{})
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var batch applyBatch
		if err := arblog.Unmarshal(raw, &batch); err != nil {
			writeMsgpack(w, wireReply{Err: errs.Errorf(errs.CodeInvalid, "%v", err)})
			return
		}
		f.mu.Lock()
		f.sizes = append(f.sizes, len(batch.Commands))
		f.inFlight++
		f.maxInFlight = max(f.maxInFlight, f.inFlight)
		f.mu.Unlock()
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-r.Context().Done():
			}
		}
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
		reply := applyBatchReply{Replies: make([]wireReply, len(batch.Commands))}
		for i := range reply.Replies {
			reply.Replies[i] = wireReply{Response: &fsm.Response{Index: uint64(i + 1)}}
		}
		out, _ := arblog.Marshal(reply)
		writeMsgpack(w, wireReply{Result: out})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLeader) api() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeLeader) seen() (sizes []int, maxInFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.sizes...), f.maxInFlight
}

// testForwarder runs a forwarder on a core that has nothing but what
// forwarding uses; stopping it cancels the node's context and waits for
// every goroutine the forwarder started.
func testForwarder(t *testing.T) (*forwarder, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	n := &core{ctx: ctx, cancel: cancel, cfg: Config{ApplyTimeout: 10 * time.Second}, peers: &http.Client{Transport: newPeerTransport()}}
	fw := newForwarder(n)
	fw.start()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); n.wg.Wait() }) }
	t.Cleanup(stop)
	return fw, stop
}

// enqueue puts k calls for api on fw's queue and waits until the
// dispatcher has taken them all.
func enqueue(t *testing.T, fw *forwarder, api string, k int) []*forwardCall {
	t.Helper()
	calls := make([]*forwardCall, k)
	for i := range calls {
		calls[i] = &forwardCall{ctx: context.Background(), api: api, data: []byte{0x80}, done: make(chan forwardResult, 1)}
		fw.queue <- calls[i]
	}
	waitFor(t, "the dispatcher to take the calls", func() bool { return len(fw.queue) == 0 })
	return calls
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func answered(t *testing.T, calls []*forwardCall) []forwardResult {
	t.Helper()
	out := make([]forwardResult, len(calls))
	for i, c := range calls {
		select {
		case out[i] = <-c.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d of %d was never answered", i, len(calls))
		}
	}
	return out
}

// While a batch is out, what arrives for the same leader waits and goes
// in one next batch, not in batches of its own.
func TestForwarderKeepsOneBatchInFlightPerLeader(t *testing.T) {
	leader := newFakeLeader(t, true)
	fw, _ := testForwarder(t)
	first := enqueue(t, fw, leader.api(), 1)
	waitFor(t, "the first batch to reach the leader", func() bool { s, _ := leader.seen(); return len(s) == 1 })
	rest := enqueue(t, fw, leader.api(), 10)
	close(leader.gate)
	for _, r := range answered(t, append(first, rest...)) {
		if r.err != nil || r.res == nil {
			t.Fatalf("a call failed: %v", r.err)
		}
	}
	if sizes, most := leader.seen(); len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 10 || most != 1 {
		t.Fatalf("batches %v with up to %d at once, want [1 10] one at a time", sizes, most)
	}
}

// A full batch waiting sends another while one is out, up to
// forwardSenders at once, so one batch per commit does not cap a busy
// follower.
func TestForwarderSendsMoreBatchesOnlyWhileFullOnesWait(t *testing.T) {
	leader := newFakeLeader(t, true)
	fw, _ := testForwarder(t)
	calls := enqueue(t, fw, leader.api(), 1)
	waitFor(t, "the first batch to reach the leader", func() bool { s, _ := leader.seen(); return len(s) == 1 })
	calls = append(calls, enqueue(t, fw, leader.api(), (forwardSenders+1)*maxForwardBatch)...)
	waitFor(t, "the full batches to reach the leader", func() bool { s, _ := leader.seen(); return len(s) == forwardSenders })
	close(leader.gate)
	for _, r := range answered(t, calls) {
		if r.err != nil {
			t.Fatalf("a call failed: %v", r.err)
		}
	}
	sizes, most := leader.seen()
	if most != forwardSenders {
		t.Errorf("up to %d batches at once, want %d", most, forwardSenders)
	}
	total := 0
	for i, s := range sizes {
		total += s
		if i > 0 && i < forwardSenders && s != maxForwardBatch {
			t.Errorf("batch %d held %d while more than a full one waited (sizes %v)", i, s, sizes)
		}
	}
	if total != len(calls) {
		t.Errorf("the leader received %d commands of %d", total, len(calls))
	}
}

// A batch stuck at a leader that no longer answers holds up none of the
// calls for the next one.
func TestForwarderCallsForANewLeaderPassAStuckOne(t *testing.T) {
	stuck := newFakeLeader(t, true)
	next := newFakeLeader(t, false)
	fw, stop := testForwarder(t)
	old := enqueue(t, fw, stuck.api(), 1)
	waitFor(t, "the batch to reach the stuck leader", func() bool { s, _ := stuck.seen(); return len(s) == 1 })
	enqueue(t, fw, stuck.api(), 3) // waiting behind it
	for _, r := range answered(t, enqueue(t, fw, next.api(), 5)) {
		if r.err != nil {
			t.Fatalf("a call for the new leader failed: %v", r.err)
		}
	}
	stop()
	if r := answered(t, old)[0]; r.err == nil {
		t.Fatal("the call at the stuck leader succeeded after the node stopped")
	}
}

// A stopping node answers every call it has not sent, as not sent.
func TestForwarderRefusesWhatItHoldsWhenTheNodeStops(t *testing.T) {
	leader := newFakeLeader(t, true)
	fw, stop := testForwarder(t)
	enqueue(t, fw, leader.api(), 1)
	waitFor(t, "the first batch to reach the leader", func() bool { s, _ := leader.seen(); return len(s) == 1 })
	waiting := enqueue(t, fw, leader.api(), 7)
	stop()
	for _, r := range answered(t, waiting) {
		if errs.CodeOf(r.err) != errs.CodeUnavailable {
			t.Fatalf("a waiting call answered %v, want unavailable (not sent)", r.err)
		}
	}
	if sizes, _ := leader.seen(); len(sizes) != 1 {
		t.Fatalf("the leader received %d batches, want only the first", len(sizes))
	}
}
