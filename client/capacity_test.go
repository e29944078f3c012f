package client_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

func TestCapacity(t *testing.T) {
	c := newClient(t, "ops")
	ctx, caps := ctxOf(t), c.Capacity()
	me, err := c.Cluster().Whoami(ctx)
	must(t, err)
	tenant, owner := unique(t), me.OwnerDigest

	cell, err := caps.UpdateCell(ctx, client.UpdateCellRequest{TenantRef: tenant,
		Cell: client.CellSpec{CellID: "gpu-1", Capacities: map[string]uint64{"gpu": 8, "mem_gib": 64}}})
	must(t, err)
	if cell.Cell.Epoch < 1 || len(cell.Cell.Classes) != 2 {
		t.Fatalf("update cell: %+v", cell.Cell)
	}
	stale := cell.Cell.Epoch + 7
	_, err = caps.UpdateCell(ctx, client.UpdateCellRequest{TenantRef: tenant, ExpectedEpoch: &stale,
		Cell: client.CellSpec{CellID: "gpu-1", Capacities: map[string]uint64{"gpu": 4}}})
	wantCode(t, err, errs.CodeStaleEpoch)

	demands := []client.Demand{{CellID: "gpu-1", ResourceClass: "gpu", Amount: 6}, {CellID: "gpu-1", ResourceClass: "mem_gib", Amount: 48}}
	acq := client.AcquireRequest{TenantRef: tenant, WorkItemID: "train-42", OwnerDigest: owner, Demands: demands, TTLMs: 30_000, IdempotencyKey: "train-42/1"}
	got, err := caps.Acquire(ctx, acq)
	must(t, err)
	if got.Decision != "granted" || len(got.Leases) != 2 || got.Leases[0].Fence == 0 {
		t.Fatalf("acquire: %+v", got)
	}
	replay, err := caps.Acquire(ctx, acq)
	must(t, err)
	if !replay.Replayed || replay.Leases[0].LeaseID != got.Leases[0].LeaseID {
		t.Fatalf("replay: %+v", replay)
	}
	_, err = caps.Acquire(ctx, client.AcquireRequest{TenantRef: tenant, WorkItemID: "train-44", OwnerDigest: owner,
		Demands: []client.Demand{{CellID: "gpu-1", ResourceClass: "gpu", Amount: 3}}, TTLMs: 30_000})
	wantCode(t, err, errs.CodeExhausted)
	if res, _ := errs.From(err).Detail["result"].(map[string]any); res["decision"] != "exhausted" {
		t.Fatalf("a denial carries its result: %v", errs.From(err).Detail)
	}

	renewed, err := caps.Renew(ctx, client.LeasesRequest{TenantRef: tenant, OwnerDigest: owner, Leases: client.LeaseRefs(got.Leases), TTLMs: 60_000})
	must(t, err)
	if renewed.Leases[0].LeaseEpoch != got.Leases[0].LeaseEpoch+1 {
		t.Fatalf("renew: epoch %d after %d", renewed.Leases[0].LeaseEpoch, got.Leases[0].LeaseEpoch)
	}
	_, err = caps.Release(ctx, client.LeasesRequest{TenantRef: tenant, OwnerDigest: owner, Leases: client.LeaseRefs(got.Leases)})
	wantCode(t, err, errs.CodeStaleEpoch) // the epochs before the renewal
	released, err := caps.Release(ctx, client.LeasesRequest{TenantRef: tenant, OwnerDigest: owner, Leases: client.LeaseRefs(renewed.Leases)})
	must(t, err)
	for _, l := range released.Leases {
		if l.State != "released" {
			t.Fatalf("release: %+v", l)
		}
	}

	page, err := caps.Reconcile(ctx, client.CapacityReadRequest{TenantRef: tenant, CellID: "gpu-1"})
	must(t, err)
	if len(page.Cells) != 1 || page.Cells[0].Classes[0].Used != 0 {
		t.Fatalf("reconcile: %+v", page)
	}
	st, err := caps.Status(ctx, client.CapacityReadRequest{TenantRef: tenant})
	must(t, err)
	if len(st.Leases) != 0 || len(st.Cells) != 1 {
		t.Fatalf("status: %+v", st)
	}
	rec, err := caps.Reclaim(ctx, client.CapacityReclaimRequest{TenantRef: tenant})
	must(t, err)
	if len(rec.ReclaimedLeaseIDs) != 0 {
		t.Fatalf("reclaim with nothing expired: %+v", rec)
	}
}
