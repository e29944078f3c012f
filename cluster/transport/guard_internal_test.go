package transport

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// handlerTransport records the heartbeat handler it is given.
type handlerTransport struct {
	*raft.InmemTransport
	handler func(raft.RPC)
}

func (h *handlerTransport) SetHeartbeatHandler(cb func(raft.RPC)) { h.handler = cb }

// close waits for a heartbeat in flight, and a heartbeat after close is
// refused with an error instead of reaching raft (whose stores may be
// closed by then).
func TestHeartbeatGuardWaitsAndRefuses(t *testing.T) {
	_, inmem := raft.NewInmemTransport("")
	inner := &handlerTransport{InmemTransport: inmem}
	trans, guard := NewGuard(inner)
	if _, ok := trans.(raft.WithPreVote); !ok {
		t.Fatal("the guard hid the transport's pre-vote support")
	}
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	trans.SetHeartbeatHandler(func(rpc raft.RPC) {
		calls++
		close(entered)
		<-release
		rpc.Respond(&raft.AppendEntriesResponse{}, nil)
	})

	firstResp := make(chan raft.RPCResponse, 1)
	first := raft.RPC{RespChan: firstResp}
	go inner.handler(first)
	<-entered
	closed := make(chan struct{})
	go func() {
		guard.Shut()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("close returned while a heartbeat was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	if resp := <-firstResp; resp.Error != nil {
		t.Fatalf("the heartbeat in flight got %v", resp.Error)
	}

	lateResp := make(chan raft.RPCResponse, 1)
	inner.handler(raft.RPC{RespChan: lateResp})
	if resp := <-lateResp; !errors.Is(resp.Error, errShuttingDown) {
		t.Fatalf("a heartbeat after close got %v, want %v", resp.Error, errShuttingDown)
	}
	if calls != 1 {
		t.Fatalf("raft's handler ran %d times, want 1", calls)
	}
}

// scriptedConsumer feeds the guard RPCs from a channel the test holds.
type scriptedConsumer struct {
	*raft.InmemTransport
	in chan raft.RPC
}

func (c *scriptedConsumer) Consumer() <-chan raft.RPC { return c.in }

// An RPC still waiting for raft when the node stops is answered with an
// error and a response of its type: raft's in-memory pipeline reads the
// response before the error, and a nil one made the leader panic in a
// soak ("interface {} is nil, not *raft.AppendEntriesResponse").
func TestGuardAnswersPendingRPCsWithTypedResponses(t *testing.T) {
	_, inmem := raft.NewInmemTransport("")
	inner := &scriptedConsumer{InmemTransport: inmem, in: make(chan raft.RPC)}
	_, guard := NewGuard(inner)
	respCh := make(chan raft.RPCResponse, 1)
	inner.in <- raft.RPC{Command: &raft.AppendEntriesRequest{Entries: []*raft.Log{{Index: 1}}}, RespChan: respCh}
	guard.Shut() // raft never read it
	select {
	case resp := <-respCh:
		if _, ok := resp.Response.(*raft.AppendEntriesResponse); !ok || !errors.Is(resp.Error, errShuttingDown) {
			t.Fatalf("pending append answered with %T %v", resp.Response, resp.Error)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pending RPC was never answered")
	}
}

// A snapshot that arrives while raft is still handling the AppendEntries
// before it is checked against the applied index that AppendEntries
// leaves, not the one before it: the AppendEntries commits past the
// snapshot, so the snapshot is refused. (Checked at arrival, it passed and
// rewound the replica: TestFaultsTCP caught it.)
func TestStaleSnapshotCheckedAfterThePreviousRPC(t *testing.T) {
	_, inmem := raft.NewInmemTransport("")
	inner := &scriptedConsumer{InmemTransport: inmem, in: make(chan raft.RPC, 2)}
	trans, guard := NewGuard(inner)
	defer guard.Shut()
	var applied atomic.Uint64
	applied.Store(50)
	guard.WatchApplied(applied.Load, slog.New(slog.DiscardHandler))

	aeResp, snapResp := make(chan raft.RPCResponse, 1), make(chan raft.RPCResponse, 1)
	inner.in <- raft.RPC{Command: &raft.AppendEntriesRequest{LeaderCommitIndex: 100}, RespChan: aeResp}
	inner.in <- raft.RPC{Command: &raft.InstallSnapshotRequest{LastLogIndex: 90}, RespChan: snapResp}

	// Raft: takes the AppendEntries, applies up to 100 a while later, answers.
	ae := <-trans.Consumer()
	if _, ok := ae.Command.(*raft.AppendEntriesRequest); !ok {
		t.Fatalf("raft got %T first", ae.Command)
	}
	time.Sleep(100 * time.Millisecond)
	applied.Store(100)
	ae.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	if resp := <-aeResp; resp.Error != nil || !resp.Response.(*raft.AppendEntriesResponse).Success {
		t.Fatalf("the AppendEntries answer was not relayed: %+v", resp)
	}
	select {
	case rpc := <-trans.Consumer():
		t.Fatalf("raft was given the snapshot at 90 after applying 100: %T", rpc.Command)
	case resp := <-snapResp:
		if resp.Error == nil {
			t.Fatal("the stale snapshot was answered without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stale snapshot got no answer")
	}
}
