package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// The host resource reservation ops (docs/domains/reservations.md):
// hold-reserve reserves a host for one claimed item per call,
// hold-release releases one reservation per call. Their setup (not
// measured) puts the bench's profile into the cluster's set, registers
// benchHosts hosts with fresh telemetry, admits items carrying a sealed
// resource_reservation record and claims them (and, for hold-release,
// reserves them).

// benchHosts is how many hosts the setup registers: a reserve without a
// host_id examines every host (at most workitem.MaxHosts), as a real one
// does.
const benchHosts = 4

// benchProfile is the enabled profile the bench's items are admitted
// under: every field set (an empty or zero one refuses reserves), room
// for far more reservations than a pool holds, telemetry good for the
// longest age a profile allows.
var benchProfile = workitem.Profile{Name: "arbiter-bench", Version: "v1",
	Weights:  workitem.Weights{CPU: 1, Memory: 1, Disk: 1, Process: 1},
	Max:      workitem.Dimensions{CPUMillis: 1 << 20, MemoryMiB: 1 << 20, DiskMiB: 1 << 20, Processes: 1 << 20},
	Fairness: workitem.FairnessPolicy{MaxDebt: workitem.MaxDebt, DecayPerS: 1}, Disk: workitem.DiskPolicy{MinFreeMiB: 1},
	TelemetryMaxAgeMs: workitem.MaxTelemetryAge.Milliseconds(), Mode: workitem.ModeEnabled}

// benchExtension is each item's record: a small demand in every
// dimension, a shared repository and branch, a concurrency key and a
// fairness charge, so that a reserve takes every check a real one does.
var benchExtension = extension.Extension{Profile: extension.ProfileRef{Name: benchProfile.Name, Version: benchProfile.Version},
	Dimensions:  workitem.Dimensions{CPUMillis: 1, MemoryMiB: 1, DiskMiB: 1, Processes: 1},
	Concurrency: extension.Concurrency{Key: "bench", Limit: extension.MaxLimit}, Repository: "bench-repo", BaseRef: "main",
	Fairness: extension.Fairness{Group: "bench", Cost: 1}, Disk: extension.DiskPolicy{MinFreeMiB: 1}}

// holdSetup readies the cluster for reserves and returns the pool's
// claims, each of an item that carries benchExtension.
func holdSetup(e benchEnv, name string) ([]*workitem.ClaimResult, error) {
	svc := workitem.NewService(e.remotes[0], e.remotes[0])
	if _, err := setupCall(func(ctx context.Context) (struct{}, error) { return struct{}{}, ensureBenchProfile(ctx, svc) }); err != nil {
		return nil, err
	}
	for h := range benchHosts {
		id := fmt.Sprintf("arbiter-bench-%d", h)
		if _, err := setupCall(func(ctx context.Context) (*workitem.HostResult, error) {
			return svc.PutHost(ctx, workitem.PutHostRequest{HostID: id, Labels: map[string]string{},
				Capacity: workitem.Dimensions{CPUMillis: extension.MaxDimension, MemoryMiB: extension.MaxDimension, DiskMiB: extension.MaxDimension, Processes: extension.MaxDimension}})
		}); err != nil {
			return nil, fmt.Errorf("registering host %s: %w", id, err)
		}
		if _, err := setupCall(func(ctx context.Context) (*workitem.HostResult, error) {
			// report_seq must rise over every earlier report of the
			// host, also those of earlier bench runs and attempts: the
			// clock does.
			return svc.ReportTelemetry(ctx, workitem.TelemetryRequest{HostID: id, ReportSeq: uint64(time.Now().UnixNano()), DiskFreeMiB: extension.MaxDimension})
		}); err != nil {
			return nil, fmt.Errorf("telemetry of host %s: %w", id, err)
		}
	}
	_, record, err := extension.Seal(benchExtension)
	if err != nil {
		return nil, err
	}
	metadata, _ := json.Marshal(map[string]json.RawMessage{"resource_reservation": record})
	tenants, err := submitPending(e.remotes, fmt.Sprintf("%s-r%d-%s", e.prefix, e.run, name), e.poolSize(), metadata)
	if err != nil {
		return nil, err
	}
	return claimAll(e.remotes, tenants)
}

// ensureBenchProfile adds benchProfile to the cluster's profile set
// unless the set holds it as it is (an admin's change, as the bench's
// concept policy is; the other profiles stay).
func ensureBenchProfile(ctx context.Context, svc *workitem.Service) error {
	cur, err := svc.Profiles(ctx, fsm.Linearizable)
	if err != nil {
		return fmt.Errorf("reading reservation profiles: %w", err)
	}
	set := make([]workitem.Profile, 0, len(cur.Profiles)+1)
	for _, p := range cur.Profiles {
		if p.Profile == benchProfile {
			return nil
		}
		if p.Name != benchProfile.Name || p.Version != benchProfile.Version {
			set = append(set, p.Profile)
		}
	}
	if _, err := svc.SetProfiles(ctx, workitem.ProfilesRequest{Profiles: append(set, benchProfile)}); err != nil {
		return fmt.Errorf("adding the bench's reservation profile: %w", err)
	}
	return nil
}

// reserveFor reserves a host for claim cl and checks that the answer is
// an active reservation of that claim.
func reserveFor(ctx context.Context, svc *workitem.Service, cl *workitem.ClaimResult) (*workitem.Reservation, error) {
	res, err := svc.Reserve(ctx, workitem.ReserveRequest{TenantRef: cl.WorkItem.TenantRef, WorkItemID: cl.WorkItem.WorkItemID, Attempt: cl.Attempt, Fence: cl.Fence})
	if err != nil {
		return nil, err
	}
	r := &res.Reservation
	if r.Status != workitem.ReservationActive || r.WorkItemID != cl.WorkItem.WorkItemID || r.Fence != cl.Fence || r.HostID == "" {
		return nil, fmt.Errorf("reserve for %s answered %s on %q, not an active reservation of its claim", cl.WorkItem.WorkItemID, r.Status, r.HostID)
	}
	return r, nil
}

// holdReserveOp reserves a host for one claimed item per call.
func holdReserveOp(e benchEnv) (loadgen.Op, string, error) {
	begin := time.Now()
	claims, err := holdSetup(e, "hold-reserve")
	if err != nil {
		return nil, "", err
	}
	note := fmt.Sprintf("%d items with a reservation record admitted and claimed, %d hosts, in %v", len(claims), benchHosts, time.Since(begin).Round(time.Millisecond))
	pool := newPool(claims, e.span)
	services := perClient(e.remotes, func(r *rawremote.Remote) *workitem.Service { return workitem.NewService(r, r) })
	return pool.op(func(ctx context.Context, c, _ int, cl *workitem.ClaimResult) error {
		_, err := reserveFor(ctx, services[c], cl)
		return err
	}), note, nil
}

// heldClaim is a claim and the reservation it holds.
type heldClaim struct {
	claim *workitem.ClaimResult
	id    string
}

// holdReleaseOp releases one reservation per call, fenced by its claim.
func holdReleaseOp(e benchEnv) (loadgen.Op, string, error) {
	begin := time.Now()
	claims, err := holdSetup(e, "hold-release")
	if err != nil {
		return nil, "", err
	}
	held, err := prepare(e.remotes, setupWorkers, len(claims), func(ctx context.Context, r *rawremote.Remote, j int) ([]heldClaim, error) {
		rsv, err := reserveFor(ctx, workitem.NewService(r, r), claims[j])
		if err != nil {
			return nil, err
		}
		return []heldClaim{{claims[j], rsv.ReservationID}}, nil
	})
	if err != nil {
		return nil, "", err
	}
	note := fmt.Sprintf("%d items admitted, claimed and reserved on %d hosts in %v", len(held), benchHosts, time.Since(begin).Round(time.Millisecond))
	pool := newPool(held, e.span)
	services := perClient(e.remotes, func(r *rawremote.Remote) *workitem.Service { return workitem.NewService(r, r) })
	return pool.op(func(ctx context.Context, c, _ int, h heldClaim) error {
		cl := h.claim
		res, err := services[c].Release(ctx, workitem.ReleaseRequest{TenantRef: cl.WorkItem.TenantRef,
			WorkItemID: cl.WorkItem.WorkItemID, Attempt: cl.Attempt, Fence: cl.Fence, ReservationID: h.id})
		if err == nil && (res.Reservation.Status != workitem.ReservationReleased || res.Reservation.ReservationID != h.id) {
			err = fmt.Errorf("release of %s answered %s", h.id, res.Reservation.Status)
		}
		return err
	}), note, nil
}
