package cluster

import (
	"errors"
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
	trans, guard := guardHeartbeats(inner)
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
		guard.close()
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
