package capacity_test

import (
	"context"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
)

// A controller sizes a cell, a worker acquires a GPU and memory on it in
// one all-or-nothing command, renews the lease before its deadline, and
// releases it. Every timestamp is the FSM's clock; the request's now_ms is
// ignored. (In a real deployment the Proposer and Reader are an embedded
// cluster.Node, and a program that runs no node uses package client's
// Capacity; here a bare FSM.)
func Example() {
	ctx := context.Background()
	fsmLocal, err := clustertest.NewLocal(capacity.Domain())
	if err != nil {
		panic(err)
	}
	svc := capacity.NewService(fsmLocal, fsmLocal)

	cell, err := svc.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: "acme",
		Cell: capacity.CellSpec{CellID: "gpu-node-1", Capacities: map[string]uint64{"gpu": 2, "mem_gib": 64}}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("cell %s epoch %d\n", cell.Cell.CellID, cell.Cell.Epoch)

	got, err := svc.Acquire(ctx, capacity.AcquireRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: "acme",
		WorkItemID: "train-42", OwnerDigest: "worker-7", IdempotencyKey: "train-42/attempt-1", TTLMs: 30_000,
		NowMs: 1, // ignored
		Demands: []capacity.Demand{
			{CellID: "gpu-node-1", ResourceClass: "gpu", Amount: 1},
			{CellID: "gpu-node-1", ResourceClass: "mem_gib", Amount: 48},
		}})
	if err != nil {
		panic(err)
	}
	fmt.Println("acquire:", got.Decision)
	for _, l := range got.Leases {
		fmt.Printf("  %s %d fence %d epoch %d, expires in %v\n", l.ResourceClass, l.Amount, l.Fence, l.LeaseEpoch,
			time.Duration(l.ExpiresAtMs-got.NowMs)*time.Millisecond)
	}

	// A second worker asking for more memory than is left gets nothing.
	_, err = svc.Acquire(ctx, capacity.AcquireRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: "acme",
		WorkItemID: "train-43", OwnerDigest: "worker-8", IdempotencyKey: "train-43/attempt-1", TTLMs: 30_000,
		Demands: []capacity.Demand{
			{CellID: "gpu-node-1", ResourceClass: "gpu", Amount: 1},
			{CellID: "gpu-node-1", ResourceClass: "mem_gib", Amount: 32},
		}})
	fmt.Println("second acquire:", err)

	fsmLocal.Advance(20 * time.Second)
	renewed, err := svc.Renew(ctx, capacity.LeasesRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: "acme",
		OwnerDigest: "worker-7", Leases: got.Refs()}) // each lease's Ref: id, epoch and fence
	if err != nil {
		panic(err)
	}
	fmt.Println("renew:", renewed.Decision)
	for _, l := range renewed.Leases {
		fmt.Printf("  %s epoch %d, expires in %v\n", l.ResourceClass, l.LeaseEpoch, time.Duration(l.ExpiresAtMs-renewed.NowMs)*time.Millisecond)
	}

	// The renewal's Refs carry the new epochs: the next call presents them.
	released, err := svc.Release(ctx, capacity.LeasesRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: "acme",
		OwnerDigest: "worker-7", Leases: renewed.Refs()})
	if err != nil {
		panic(err)
	}
	fmt.Println("release:", released.Decision, released.Leases[0].State, released.Leases[1].State)

	status, err := svc.Status(ctx, capacity.ReadRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: "acme", CellID: "gpu-node-1", MaxCount: 1}, 0)
	if err != nil {
		panic(err)
	}
	for _, c := range status.Cells[0].Classes {
		fmt.Printf("%s: %d of %d used\n", c.ResourceClass, c.Used, c.Capacity)
	}
	// Output:
	// cell gpu-node-1 epoch 1
	// acquire: granted
	//   gpu 1 fence 1 epoch 1, expires in 30s
	//   mem_gib 48 fence 2 epoch 1, expires in 30s
	// second acquire: exhausted: cell "gpu-node-1" has 16 of "mem_gib" free, 32 asked
	// renew: granted
	//   gpu epoch 2, expires in 30s
	//   mem_gib epoch 2, expires in 30s
	// release: granted released released
	// gpu: 0 of 2 used
	// mem_gib: 0 of 64 used
}
