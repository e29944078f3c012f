package workitem_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// A scheduler admits a build with its resource_reservation record, a
// worker claims it and reserves a shared host in the same replicated
// transaction as the claim's fence; a second build that needs the
// repository exclusively is refused while the first holds it, and
// reserves once the first build completes (its reservation ends with
// its claim). (In a deployment the Proposer and Reader are an embedded
// cluster.Node, or a program uses package client's Reservations, and
// --reservation-profiles loads the profiles; here a bare FSM.)
func Example_reservation() {
	ctx := context.Background()
	l, err := clustertest.NewLocal(workitem.Domain())
	if err != nil {
		panic(err)
	}
	// A cluster enables the commands once every member serves them.
	if _, err := l.Propose(ctx, log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(fsm.ServedBy(workitem.Module()))}); err != nil {
		panic(err)
	}
	svc := workitem.NewService(l, l)

	profile := workitem.Profile{Name: "ci", Version: "2026-01", Weights: workitem.Weights{CPU: 1, Memory: 1, Disk: 1, Process: 1},
		Max:      workitem.Dimensions{CPUMillis: 16000, MemoryMiB: 65536, DiskMiB: 262144, Processes: 64},
		Fairness: workitem.FairnessPolicy{MaxDebt: 100, DecayPerS: 1}, Disk: workitem.DiskPolicy{MinFreeMiB: 1024},
		TelemetryMaxAgeMs: 60_000, Mode: workitem.ModeEnabled}
	must(svc.SetProfiles(ctx, workitem.ProfilesRequest{Profiles: []workitem.Profile{profile}}))
	must(svc.PutHost(ctx, workitem.PutHostRequest{HostID: "builder-1", Labels: map[string]string{"arch": "amd64"},
		Capacity: workitem.Dimensions{CPUMillis: 8000, MemoryMiB: 32768, DiskMiB: 102400, Processes: 16}}))
	must(svc.ReportTelemetry(ctx, workitem.TelemetryRequest{HostID: "builder-1", ReportSeq: 1, DiskFreeMiB: 90000}))

	build := func(id string, exclusive bool) *workitem.ClaimResult {
		_, record, err := extension.Seal(extension.Extension{Profile: extension.ProfileRef{Name: "ci", Version: "2026-01"},
			Dimensions:  workitem.Dimensions{CPUMillis: 4000, MemoryMiB: 8192, DiskMiB: 20480, Processes: 4},
			Concurrency: extension.Concurrency{Key: "ci", Limit: 4}, Exclusivity: extension.Exclusivity{Repository: exclusive},
			Repository: "github.com/acme/app", BaseRef: "main", Fairness: extension.Fairness{Group: "team-a", Cost: 1},
			HostLabels: map[string]string{"arch": "amd64"}})
		if err != nil {
			panic(err)
		}
		meta, _ := json.Marshal(map[string]any{"repository_request_v1": map[string]string{"repo": "acme/app"}, "resource_reservation": json.RawMessage(record)})
		must(svc.Submit(ctx, workitem.SubmitRequest{TenantRef: "acme", WorkItemID: id, IdempotencyKey: id, CommandDigest: "sha256:" + strings.Repeat("0", 64),
			Kind: "build", InputRef: "git:abc", PolicyDigest: "sha256:" + strings.Repeat("1", 64),
			CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64), MaxAttempts: 3, MaxTenantInFlight: 10, Metadata: meta}))
		c, err := svc.Claim(ctx, workitem.ClaimRequest{TenantRef: "acme", OwnerRef: "worker-" + id, WorkItemID: id, TTLMs: 600_000})
		if err != nil {
			panic(err)
		}
		return c
	}
	first, second := build("build-1", false), build("build-2", true)
	reserve := func(c *workitem.ClaimResult) (*workitem.ReservationResult, error) {
		return svc.Reserve(ctx, workitem.ReserveRequest{TenantRef: "acme", WorkItemID: c.WorkItem.WorkItemID, Attempt: c.Attempt, Fence: c.Fence})
	}
	r, err := reserve(first)
	if err != nil {
		panic(err)
	}
	fmt.Printf("build-1 on %s, %d millicpu, fairness debt %d\n", r.Reservation.HostID, r.Reservation.Dimensions.CPUMillis, r.Reservation.FairnessDebtAfter)
	_, err = reserve(second)
	fmt.Println("build-2 (exclusive):", errs.CodeOf(err), errs.From(err).Detail["reason"])

	must(svc.Complete(ctx, workitem.CompleteRequest{TenantRef: "acme", WorkItemID: "build-1", Attempt: first.Attempt, Fence: first.Fence, Outcome: workitem.StatusSucceeded}))
	r, err = reserve(second)
	if err != nil {
		panic(err)
	}
	fmt.Printf("build-2 on %s, holding the repository exclusively: %t\n", r.Reservation.HostID, r.Reservation.Keys.RepositoryExclusive)
	q, _ := svc.Query(ctx, workitem.QueryRequest{TenantRef: "acme", MaxCount: workitem.MaxQueryPage}, fsm.Linearizable)
	for _, x := range q.Reservations {
		fmt.Println(x.WorkItemID, x.Status+strings.TrimRight(" "+x.EndReason, " "))
	}
	fmt.Println("builder-1 uses", q.Hosts[0].Used.CPUMillis, "millicpu")
	_, err = svc.Reserve(ctx, workitem.ReserveRequest{TenantRef: "acme", WorkItemID: "build-1", Attempt: first.Attempt, Fence: first.Fence})
	fmt.Println("the ended claim reserves again:", errors.Is(err, errs.StaleFence))
	// Output:
	// build-1 on builder-1, 4000 millicpu, fairness debt 1
	// build-2 (exclusive): conflict repository_exclusive
	// build-2 on builder-1, holding the repository exclusively: true
	// build-1 ended claim_ended
	// build-2 active
	// builder-1 uses 4000 millicpu
	// the ended claim reserves again: true
}

func must[R any](_ R, err error) {
	if err != nil {
		panic(err)
	}
}
