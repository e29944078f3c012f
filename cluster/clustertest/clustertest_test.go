package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
)

// This file uses the kit as a program that embeds Arbiter would: it
// imports only public packages of the module.

// counterIn is a fenced counter's operation: read, or move from Expect to
// Expect+1.
type counterIn struct {
	Read   bool
	Expect int
}

// counterOut is what the caller was told: the value read, or whether the
// increment applied.
type counterOut struct {
	Value   int
	Swapped bool
}

var counterModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		v, in := state.(int), input.(counterIn)
		if clustertest.IsUnknown(output) {
			if !in.Read && in.Expect == v {
				return true, v + 1
			}
			return true, v
		}
		out := output.(counterOut)
		if in.Read {
			return out.Value == v, v
		}
		if in.Expect == v {
			return out.Swapped, v + 1
		}
		return !out.Swapped, v
	},
}

// A fenced counter on the node primitives stays linearizable while the
// test partitions the leader away, kills and restarts a follower, and
// pauses a node; the replicas converge afterwards.
func TestFaultsKeepAUserModelLinearizable(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	ctx := context.Background()
	remote := c.Remote()
	nc := nodes.On(remote)
	if _, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "counter", Properties: map[string]any{"n": 0}}); err != nil {
		t.Fatal(err)
	}
	h := clustertest.NewHistory()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for client := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.RemoteOf(client) // each call below is bounded by its own 2 s context
			cl := nodes.On(r)
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				if k%2 == 0 {
					op := h.Call(client, counterIn{Read: true})
					n, err := cl.Get(cctx, "counter", fsm.Linearizable)
					if err != nil {
						op.Fail(err, false)
					} else {
						var v int
						fmt.Sscan(string(n.Properties["n"]), &v)
						op.Return(counterOut{Value: v})
					}
				} else {
					n, err := cl.Get(cctx, "counter", fsm.Stale)
					var v int
					if err == nil {
						fmt.Sscan(string(n.Properties["n"]), &v)
					}
					op := h.Call(client, counterIn{Expect: v})
					res, err := cl.CompareAndSet(cctx, nodes.CASRequest{NodeID: "counter", Conditions: map[string]any{"n": v}, Updates: map[string]any{"n": v + 1}})
					if err != nil {
						op.Fail(err, true)
					} else {
						op.Return(counterOut{Swapped: res.Swapped})
					}
				}
				cancel()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	leader := c.WaitLeader(10 * time.Second)
	h.Mark("fault", "isolate the leader")
	c.Isolate(leader)
	time.Sleep(time.Second)
	c.Heal()
	follower := (c.WaitLeader(10*time.Second) + 1) % c.Size()
	h.Mark("fault", "kill a follower")
	c.Kill(follower)
	time.Sleep(500 * time.Millisecond)
	c.Restart(follower)
	h.Mark("fault", "pause a node")
	c.Pause(follower)
	time.Sleep(500 * time.Millisecond)
	c.Resume(follower)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	if got := clustertest.Check(t, counterModel, h, 20*time.Second); got != porcupine.Ok {
		t.Fatalf("check: %v", got)
	}
	if len(h.Operations()) < 10 {
		t.Errorf("only %d operations recorded", len(h.Operations()))
	}
	c.WaitConverged(20 * time.Second)
}

// The check is not vacuous: two clients each told, one after the other,
// that they hold the same lock is not linearizable.
func TestCheckFindsAViolation(t *testing.T) {
	model := porcupine.Model{
		Init: func() any { return "" },
		Step: func(state, input, output any) (bool, any) {
			holder := state.(string)
			if holder == "" {
				holder = input.(string)
			}
			return clustertest.IsUnknown(output) || output.(string) == holder, holder
		},
	}
	h := clustertest.NewHistory()
	h.Call(0, "a").Return("a")
	h.Call(1, "b").Return("b")
	if got := clustertest.CheckOperations(model, h, 5*time.Second); got != porcupine.Illegal {
		t.Fatalf("two holders: %v, want Illegal", got)
	}
	// An unknown outcome may stand for "never applied".
	h = clustertest.NewHistory()
	h.Call(0, "a").Fail(errs.Unknown("timeout"), true)
	h.Call(1, "b").Return("b")
	if got := clustertest.CheckOperations(model, h, 5*time.Second); got != porcupine.Ok {
		t.Fatalf("an unknown then a decided acquire: %v, want Ok", got)
	}
}

// Start reports a configuration the nodes refuse as an error, not a
// panic, and a cluster from it serves over Remote until Close.
func TestStartAndClose(t *testing.T) {
	_, err := clustertest.Start(clustertest.Options{Nodes: 1, Configure: func(_ int, cfg *cluster.Config) { cfg.SnapshotInterval = time.Nanosecond }})
	if err == nil || !strings.Contains(err.Error(), "clustertest") {
		t.Fatalf("start with a refused config: %v", err)
	}
	c, err := clustertest.Start(clustertest.Options{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Remote()
	if _, err := nodes.On(r).CreateIfAbsent(context.Background(), nodes.CreateRequest{NodeID: "x"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close() // twice is harmless
	_, err = nodes.On(r).Get(context.Background(), "x", fsm.Stale)
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("a read after Close: %v, want unavailable", err)
	}
}

// Advance moves FSM time on every node by at least d (an hour, which the
// test could not sleep through).
func TestAdvanceMovesEveryNodesTime(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	c.WaitLeader(10 * time.Second)
	before := int64(0)
	for _, i := range c.Running() {
		before = max(before, c.Node(i).FSM().Now())
	}
	c.Advance(time.Hour) // returns within seconds, or the test times out
	for _, i := range c.Running() {
		if now := c.Node(i).FSM().Now(); now < before+time.Hour.Milliseconds() {
			t.Errorf("node %d at FSM time %d, want at least %d", i, now, before+time.Hour.Milliseconds())
		}
	}
}
