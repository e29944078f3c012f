package capacity_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

// fenceSink is what a fenced resource remembers: the highest fence it
// has seen per cell. A write under a fence not above it is refused.
type fenceSink map[string]uint64

func (s fenceSink) accept(t *testing.T, leases []capacity.Lease) (fresh bool) {
	t.Helper()
	fresh = true
	for _, l := range leases {
		if l.Fence <= s[l.CellID] {
			fresh = false
		}
		s[l.CellID] = max(s[l.CellID], l.Fence)
	}
	return fresh
}

// restoreFrom rolls l back to backup as a cluster restore does:
// PrepareRestore keeps the index moving forward, and every replica
// restores the prepared stream.
func restoreFrom(t *testing.T, l *fsmtest.Local, backup []byte) {
	t.Helper()
	var prepared bytes.Buffer
	if _, _, err := l.FSM.PrepareRestore(bytes.NewReader(backup), &prepared); err != nil {
		t.Fatal(err)
	}
	if err := l.FSM.Restore(io.NopCloser(&prepared)); err != nil {
		t.Fatal(err)
	}
}

// Fences never repeat after a backup is restored: with capacity_acquire
// version 2 enabled they derive from the log index, so every fence issued
// after the restore is above every fence issued before it, as a sink that
// remembers the highest fence it saw requires. Under version 1 (counted
// per cell from the restored counter) the same sequence hands out a fence
// an earlier holder already had: the defect version 2 fixes.
func TestFencesAfterARestoreStayAboveEveryFenceIssued(t *testing.T) {
	for _, gated := range []bool{true, false} {
		t.Run(fmt.Sprintf("version2=%v", gated), func(t *testing.T) {
			ctx := context.Background()
			l, svc := newService(t)
			if gated {
				res, err := l.Propose(ctx, log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(fsm.ServedBy(capacity.Module()))})
				if err != nil || res.Err != nil {
					t.Fatalf("enable: %v %v", err, res.Err)
				}
			}
			cell(t, svc, "c1", map[string]uint64{"gpu": 8})
			sink := fenceSink{}
			grant := func(key string) bool {
				res, err := svc.Acquire(ctx, acquire(key, capacity.Demand{CellID: "c1", ResourceClass: "gpu", Amount: 1}))
				if err != nil {
					t.Fatalf("acquire %s: %v", key, err)
				}
				return sink.accept(t, res.Leases)
			}
			grant("before")
			backup := fsmtest.Snapshot(t, l.FSM)
			for i := range 3 {
				grant(fmt.Sprintf("after-%d", i))
			}
			restoreFrom(t, l, backup)
			fresh := grant("after-restore")
			if gated && !fresh {
				t.Fatalf("a fence issued after the restore is not above the %d the sink saw", sink["c1"])
			}
			if !gated && fresh {
				t.Fatal("version 1 no longer reissues fences after a restore: the control is broken")
			}
		})
	}
}
