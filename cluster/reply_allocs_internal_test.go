package cluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// headerWriter is the least http.ResponseWriter: a header and a count of
// the bytes written.
type headerWriter struct {
	h http.Header
	n int
}

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) WriteHeader(int)             {}
func (w *headerWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// Every msgpack answer (each create's, and each forwarded batch's)
// goes through writeMsgpack: its header value and its buffer are shared,
// so that an answer allocates nothing of its own (issue 42). Under the
// race detector sync.Pool drops some of what it is given: less than one
// allocation a call on average is what both builds hold to.
func TestWriteMsgpackAllocatesNothing(t *testing.T) {
	w := &headerWriter{h: http.Header{}}
	reply := wireReply{Response: &fsm.Response{Index: 7, Time: 1, Result: arblog.MustMarshal(map[string]any{"created": true})}}
	want, err := arblog.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(200, func() { writeMsgpack(w, reply) })
	if n >= 1 {
		t.Errorf("%v allocations an answer, want none", n)
	}
	if got := w.h.Get("Content-Type"); got != mimeMsgpack {
		t.Errorf("Content-Type %q", got)
	}
	if w.n != 201*len(want) {
		t.Errorf("wrote %d bytes in 201 answers of %d", w.n, len(want))
	}
}

// A client's command is decoded without a copy of its payload, and as
// no adapter, whatever it says.
func TestClientCommandSharesTheBody(t *testing.T) {
	encode := func(adapter string) []byte {
		body, err := arblog.Encode(arblog.Command{Type: 10, Version: 1, Adapter: adapter, Payload: arblog.MustMarshal(map[string]any{"node_id": "n-1"})})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	body := encode("")
	var cmd arblog.Command
	var err error
	n := testing.AllocsPerRun(100, func() {
		if cmd, err = clientCommand(body); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations a command, want 0", n)
	}
	if cmd.Type != 10 || len(cmd.Payload) == 0 {
		t.Errorf("decoded %+v", cmd)
	}
	if cmd, err = clientCommand(encode("authority")); err != nil || cmd.Adapter != "" {
		t.Errorf("a client's command as adapter %q, %v", cmd.Adapter, err)
	}
}

// A forwarded command costs its encoding and nothing more on the way to
// the dispatcher and back: its call and channel are reused (issue 42).
// The stand-in dispatcher answers each call at once.
func TestForwardSubmitReusesItsCall(t *testing.T) {
	fw := &forwarder{queue: make(chan *forwardCall, 1)}
	want := &fsm.Response{Index: 9}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case c := <-fw.queue:
				c.done <- forwardResult{res: want}
			case <-stop:
				return
			}
		}
	}()
	cmd := arblog.Command{Type: 10, Version: 1, Payload: arblog.MustMarshal(map[string]any{"node_id": "n-1"})}
	ctx := context.Background()
	n := testing.AllocsPerRun(200, func() {
		if res, err := fw.submit(ctx, "http://leader", cmd); err != nil || res != want {
			t.Fatalf("submit: %v, %v", res, err)
		}
	})
	if n >= 2 && !raceEnabled { // the encoded command is the one allocation left
		t.Errorf("%v allocations a forwarded command, want 1", n)
	}
}

// doneFuture is a raft.Future already resolved.
type doneFuture struct{ err error }

func (f doneFuture) Error() error { return f.err }

// Every write waits for its raft future with waitFuture: its channel is
// reused (issue 42); what is left is the goroutine's start.
func TestWaitFutureReusesItsChannel(t *testing.T) {
	ctx := context.Background()
	var f raft.Future = doneFuture{}
	n := testing.AllocsPerRun(200, func() {
		if err := waitFuture(ctx, f); err != nil {
			t.Fatal(err)
		}
	})
	if n >= 2 && !raceEnabled { // under -race the pool drops what is put back now and then
		t.Errorf("%v allocations a wait, want at most 1", n)
	}
	failed := errors.New("lost")
	if err := waitFuture(ctx, doneFuture{err: failed}); err != failed {
		t.Errorf("waited: %v", err)
	}
}

// Every request passes instrument: its status recorder is reused (issue
// 42), so that a public route's handling allocates nothing of its own.
func TestInstrumentReusesItsRecorder(t *testing.T) {
	hs := &httpAPI{core: &core{metrics: newMetrics(nil)}, sem: make(chan struct{}, 4)}
	status := http.StatusOK
	h := hs.instrument("GET /x", domain.Public, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if status != http.StatusOK {
			w.WriteHeader(status)
		}
	}))
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	w := &headerWriter{h: http.Header{}}
	if n := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) }); n >= 1 {
		t.Errorf("%v allocations a request, want none", n)
	}
	// A reused recorder starts at 200 again: a 404 is counted once.
	status = http.StatusNotFound
	h.ServeHTTP(w, r)
	status = http.StatusOK
	h.ServeHTTP(w, r)
	count := func(c prometheus.Counter) float64 {
		var m dto.Metric
		if err := c.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	if got := count(hs.metrics.httpRequests.WithLabelValues("GET /x", "404")); got != 1 {
		t.Errorf("%v requests counted 404, want 1", got)
	}
	if got := count(hs.metrics.httpRequests.WithLabelValues("GET /x", "200")); got != 202 {
		t.Errorf("%v requests counted 200, want 202", got)
	}
}
