package capacity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

func newService(t *testing.T) (*fsmtest.Local, *capacity.Service) {
	t.Helper()
	l, err := fsmtest.New(capacity.Module())
	if err != nil {
		t.Fatal(err)
	}
	return l, capacity.NewService(l, l)
}

func cell(t *testing.T, s *capacity.Service, id string, caps map[string]uint64) {
	t.Helper()
	if _, err := s.UpdateCell(context.Background(), capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", Cell: capacity.CellSpec{CellID: id, Capacities: caps}}); err != nil {
		t.Fatal(err)
	}
}

func acquire(key string, demands ...capacity.Demand) capacity.AcquireRequest {
	return capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "t", WorkItemID: "w-" + key, OwnerDigest: "owner-a",
		IdempotencyKey: key, Demands: demands, TTLMs: 10_000}
}

func TestAcquireAllOrNothingAndRelease(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "gpu-1", map[string]uint64{"gpu": 2, "mem": 100})
	cell(t, s, "gpu-2", map[string]uint64{"gpu": 1})
	res, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 2}, capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil || res.Decision != capacity.Granted || len(res.Leases) != 2 || res.Leases[0].FenceToken != 1 {
		t.Fatalf("acquire: %+v %v", res, err)
	}
	// gpu-1 is full: a two-cell acquire is denied and charges nothing.
	denied, err := s.Acquire(ctx, acquire("k2", capacity.Demand{CellID: "gpu-1", ResourceClass: "mem", Amount: 50}, capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if !errors.Is(err, errs.Exhausted) || denied.Decision != capacity.Exhausted {
		t.Fatalf("over capacity: %+v %v", denied, err)
	}
	st, err := s.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", CellID: "gpu-1", MaxCount: 10}, 0)
	if err != nil || len(st.Cells) != 1 || st.Cells[0].Classes[1].Used != 0 {
		t.Fatalf("mem was charged by a denied acquire: %+v %v", st, err)
	}
	// Replay.
	again, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 2}, capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil || !again.Replayed || again.Leases[0].LeaseID != res.Leases[0].LeaseID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if _, err := s.Acquire(ctx, acquire("k1", capacity.Demand{CellID: "gpu-1", ResourceClass: "gpu", Amount: 1})); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("key reuse: %v", err)
	}
	// Release with a wrong fence changes nothing; the right one frees both.
	refs := []capacity.LeaseRef{{LeaseID: res.Leases[0].LeaseID, LeaseEpoch: 1, FenceToken: 1}, {LeaseID: res.Leases[1].LeaseID, LeaseEpoch: 1, FenceToken: 99}}
	if _, err := s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", Leases: refs}); !errors.Is(err, errs.StaleFence) {
		t.Fatalf("stale fence release: %v", err)
	}
	refs[1].FenceToken = res.Leases[1].FenceToken
	rel, err := s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", Leases: refs})
	if err != nil || len(rel.Leases) != 2 || rel.Leases[0].State != capacity.LeaseReleased {
		t.Fatalf("release: %+v %v", rel, err)
	}
	// Expiry by FSM time: a new lease expires, renew then fails expired.
	got, err := s.Acquire(ctx, acquire("k3", capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	l.Advance(10 * time.Second)
	_, err = s.Renew(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a",
		Leases: []capacity.LeaseRef{{LeaseID: got.Leases[0].LeaseID, LeaseEpoch: 1, FenceToken: got.Leases[0].FenceToken}}})
	if !errors.Is(err, errs.Expired) {
		t.Fatalf("renew of an expired lease: %v", err)
	}
	rc, err := s.Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 10})
	if err != nil || len(rc.ReclaimedLeaseIDs) != 1 {
		t.Fatalf("reclaim: %+v %v", rc, err)
	}
	next, err := s.Acquire(ctx, acquire("k4", capacity.Demand{CellID: "gpu-2", ResourceClass: "gpu", Amount: 1}))
	if err != nil || next.Leases[0].FenceToken <= got.Leases[0].FenceToken {
		t.Fatalf("fence after reclaim: %+v %v", next, err)
	}
}
