package workitem_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// The fixtures of the reservation tests: an FSM whose enabled set is
// this binary's (so submit version 2 checks extensions), a complete
// enabled profile, hosts with fresh telemetry, items with an extension.

// newEnabled is newService with the workitem commands enabled.
func newEnabled(t testing.TB) (*fsmtest.Local, *workitem.Service) {
	t.Helper()
	l, s := newService(t)
	enable(t, l)
	return l, s
}

func enable(t fataler, l *fsmtest.Local) {
	t.Helper()
	res, err := l.Propose(bg, log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(fsm.ServedBy(workitem.Module()))})
	if err != nil || res.Err != nil {
		t.Fatalf("enable: %v %v", err, res.Err)
	}
}

// fleet is a controller of every tenant; ops an admin of every tenant.
var (
	fleet = identity.Principal{ID: "fleet", Tenants: []string{"*"}, Roles: []string{identity.RoleController}}
	ops   = identity.Principal{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
)

// completeProfile is an enabled profile with every field set.
func completeProfile(name, version string) workitem.Profile {
	return workitem.Profile{Name: name, Version: version,
		Weights:  workitem.Weights{CPU: 1, Memory: 1, Disk: 1, Process: 1},
		Max:      workitem.Dimensions{CPUMillis: 64_000, MemoryMiB: 1 << 20, DiskMiB: 1 << 20, Processes: 1024},
		Fairness: workitem.FairnessPolicy{MaxDebt: 1000, DecayPerS: 1}, Disk: workitem.DiskPolicy{MinFreeMiB: 100},
		TelemetryMaxAgeMs: 60_000, Mode: workitem.ModeEnabled}
}

// baseExt is an extension under profile p/v1 asking 1000 millicpu,
// 1 GiB, 1 GiB of disk and one process, non-exclusive on repo-a.
func baseExt() extension.Extension {
	return extension.Extension{Profile: extension.ProfileRef{Name: "p", Version: "v1"},
		Dimensions:  workitem.Dimensions{CPUMillis: 1000, MemoryMiB: 1024, DiskMiB: 1024, Processes: 1},
		Concurrency: extension.Concurrency{Key: "builds", Limit: 100}, Repository: "repo-a", BaseRef: "main",
		Fairness: extension.Fairness{Group: "g", Cost: 1}, Disk: extension.DiskPolicy{MinFreeMiB: 10}}
}

// sealed is e's record as metadata.
func sealed(t testing.TB, e extension.Extension) json.RawMessage {
	t.Helper()
	_, raw, err := extension.Seal(e)
	if err != nil {
		t.Fatalf("seal: %v", err)
	}
	return json.RawMessage(fmt.Sprintf(`{"repository_request_v1":{"repo":"x"},"resource_reservation":%s}`, raw))
}

// setup loads profile p/v1 (complete, enabled) and hosts h1 and h2
// (8000 millicpu, 16 GiB, 100 GiB of disk, 8 processes; h2 labelled
// zone=b) with fresh telemetry.
func setup(t testing.TB, s *workitem.Service) {
	t.Helper()
	_, err := s.SetProfiles(as(ops), workitem.ProfilesRequest{Profiles: []workitem.Profile{completeProfile("p", "v1")}})
	noErr(t, "profiles", err)
	for i, id := range []string{"h1", "h2"} {
		labels := map[string]string{"zone": "a"}
		if id == "h2" {
			labels["zone"] = "b"
		}
		_, err := s.PutHost(as(fleet), workitem.PutHostRequest{HostID: id, Labels: labels,
			Capacity: workitem.Dimensions{CPUMillis: 8000, MemoryMiB: 16384, DiskMiB: 102400, Processes: 8}})
		noErr(t, "host", err)
		_, err = s.ReportTelemetry(as(fleet), workitem.TelemetryRequest{HostID: id, ReportSeq: uint64(i + 1), DiskFreeMiB: 102400})
		noErr(t, "telemetry", err)
	}
}

func noErr(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// claimed submits item id of tenant t with extension e and claims it
// (as member, for ttl).
func claimed(t testing.TB, s *workitem.Service, id string, e extension.Extension, ttl time.Duration) *workitem.ClaimResult {
	t.Helper()
	r := req("k-" + id)
	r.WorkItemID, r.Metadata = id, sealed(t, e)
	mustSubmit(t, s, r)
	c, err := s.Claim(as(member), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: id, TTLMs: ttl.Milliseconds()})
	noErr(t, "claim "+id, err)
	return c
}

func reserveOf(c *workitem.ClaimResult, host string) workitem.ReserveRequest {
	return workitem.ReserveRequest{TenantRef: c.WorkItem.TenantRef, WorkItemID: c.WorkItem.WorkItemID, Attempt: c.Attempt, Fence: c.Fence, HostID: host}
}

// reason is err's detail.reason ("" for none).
func reason(err error) string {
	if e := errs.From(err); e != nil {
		r, _ := e.Detail["reason"].(string)
		return r
	}
	return ""
}
