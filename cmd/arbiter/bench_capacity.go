package main

import (
	"context"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/internal/rawremote"
)

// The capacity ops that time acquire and release apart (--op lease times
// the pair): acquire takes a lease per call and keeps it; release frees
// one lease per call that the setup acquired.

// leasesPerTenant is how many leases the bench leaves in one tenant:
// half the tenant's backpressure bound (capacity.MaxActivePerTenant).
const leasesPerTenant = capacity.MaxActivePerTenant / 2

// benchCells creates cells cell-0 .. cell-(n-1) with room for every
// lease the bench could take in each of tenants.
func benchCells(remotes []*rawremote.Remote, tenants []string, n int) error {
	_, err := prepare(remotes, setupWorkers, len(tenants)*n, func(ctx context.Context, r *rawremote.Remote, j int) ([]struct{}, error) {
		_, err := capacity.NewService(r, r).UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: tenants[j/n],
			Cell: capacity.CellSpec{CellID: fmt.Sprintf("cell-%d", j%n), Capacities: map[string]uint64{"slot": 1 << 40}}})
		if err != nil {
			return nil, fmt.Errorf("creating cells: %w", err)
		}
		return nil, nil
	})
	return err
}

// benchTenants names the tenants that hold n leases, leasesPerTenant to
// a tenant.
func benchTenants(prefix string, n int) []string {
	t := make([]string, (n+leasesPerTenant-1)/leasesPerTenant)
	for i := range t {
		t[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return t
}

// acquireOp acquires amount 1 on one cell per call and keeps the lease
// (it expires after benchTTL). Its pool is room: the setup creates the
// cell in as many tenants as the pool's leases need.
func acquireOp(e benchEnv) (loadgen.Op, string, error) {
	begin := time.Now()
	n := e.poolSize()
	tenants := benchTenants(fmt.Sprintf("%s-r%d-acquire", e.prefix, e.run), n)
	if err := benchCells(e.remotes, tenants, 1); err != nil {
		return nil, "", err
	}
	slots := make([]string, n)
	for i := range slots {
		slots[i] = tenants[i/leasesPerTenant]
	}
	note := fmt.Sprintf("room for %d leases in %d tenant(s) made in %v", n, len(tenants), time.Since(begin).Round(time.Millisecond))
	pool := newPool(slots, e.span)
	demands := []capacity.Demand{{CellID: "cell-0", ResourceClass: "slot", Amount: 1}}
	services := perClient(e.remotes, func(r *rawremote.Remote) *capacity.Service { return capacity.NewService(r, r) })
	return pool.op(func(ctx context.Context, c, seq int, tenant string) error {
		got, err := services[c].Acquire(ctx, capacity.AcquireRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: tenant,
			WorkItemID: fmt.Sprintf("w-%d-%d", c, seq), OwnerDigest: fmt.Sprintf("client-%d", c), IdempotencyKey: fmt.Sprintf("k-%d-%d", c, seq),
			Demands: demands, TTLMs: benchTTL.Milliseconds()})
		if err == nil && (got.Replayed || got.Decision != capacity.Granted || len(got.Leases) != 1 || got.Leases[0].State != capacity.LeaseActive) {
			err = fmt.Errorf("acquire answered %s with %d lease(s), not a new lease", got.Decision, len(got.Leases))
		}
		return err
	}), note, nil
}

// heldLease is a lease the setup acquired and who holds it.
type heldLease struct {
	tenant, owner string
	ref           capacity.LeaseRef
}

// releaseOp releases one lease per call. The setup acquires them, on
// capacity.MaxDemands cells at once (one lease per demand).
func releaseOp(e benchEnv) (loadgen.Op, string, error) {
	begin := time.Now()
	n := e.poolSize()
	tenants := benchTenants(fmt.Sprintf("%s-r%d-release", e.prefix, e.run), n)
	if err := benchCells(e.remotes, tenants, capacity.MaxDemands); err != nil {
		return nil, "", err
	}
	demands := make([]capacity.Demand, capacity.MaxDemands)
	for i := range demands {
		demands[i] = capacity.Demand{CellID: fmt.Sprintf("cell-%d", i), ResourceClass: "slot", Amount: 1}
	}
	const perAcquire = capacity.MaxDemands
	held, err := prepare(e.remotes, setupWorkers, (n+perAcquire-1)/perAcquire, func(ctx context.Context, r *rawremote.Remote, j int) ([]heldLease, error) {
		tenant := tenants[j*perAcquire/leasesPerTenant]
		owner := fmt.Sprintf("setup-%d", j)
		got, err := capacity.NewService(r, r).Acquire(ctx, capacity.AcquireRequest{SchemaVersion: capacity.SchemaVersion, TenantRef: tenant,
			WorkItemID: fmt.Sprintf("w-%d", j), OwnerDigest: owner, IdempotencyKey: fmt.Sprintf("setup-%d", j), Demands: demands, TTLMs: benchTTL.Milliseconds()})
		if err != nil {
			return nil, err
		}
		out := make([]heldLease, len(got.Leases))
		for i, ref := range got.Refs() {
			out[i] = heldLease{tenant, owner, ref}
		}
		return out, nil
	})
	if err != nil {
		return nil, "", err
	}
	note := fmt.Sprintf("%d leases acquired in %v", len(held), time.Since(begin).Round(time.Millisecond))
	pool := newPool(held, e.span)
	services := perClient(e.remotes, func(r *rawremote.Remote) *capacity.Service { return capacity.NewService(r, r) })
	return pool.op(func(ctx context.Context, c, _ int, h heldLease) error {
		got, err := services[c].Release(ctx, capacity.LeasesRequest{SchemaVersion: capacity.SchemaVersion,
			TenantRef: h.tenant, OwnerDigest: h.owner, Leases: []capacity.LeaseRef{h.ref}})
		if err == nil && (got.Decision != capacity.Granted || len(got.Leases) != 1 || got.Leases[0].State != capacity.LeaseReleased) {
			err = fmt.Errorf("release answered %s with %d lease(s), not the lease released", got.Decision, len(got.Leases))
		}
		return err
	}), note, nil
}
