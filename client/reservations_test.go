package client_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

// TestReservations covers hosts, telemetry, the profile set and the
// reads; a reservation itself needs an item sealed with its admission
// record (workitem's own tests), so here the reserve and release routes
// are met with their refusals.
func TestReservations(t *testing.T) {
	ctx, r := ctxOf(t), newClient(t, "ops").Reservations()
	host, tenant := unique(t), unique(t)
	put, err := r.PutHost(ctx, client.PutHostRequest{HostID: host, Labels: map[string]string{"zone": "a"},
		Capacity: client.Dimensions{CPUMillis: 8000, MemoryMiB: 16384, DiskMiB: 100000, Processes: 32}})
	must(t, err)
	if !put.Created || put.Host.Epoch == 0 || put.Host.Capacity.CPUMillis != 8000 {
		t.Fatalf("put host: %+v", put)
	}
	stale := put.Host.Epoch + 5
	_, err = r.PutHost(ctx, client.PutHostRequest{HostID: host, Capacity: put.Host.Capacity, ExpectedEpoch: &stale})
	wantCode(t, err, errs.CodeStaleEpoch)

	tel, err := r.Telemetry(ctx, client.TelemetryRequest{HostID: host, ReportSeq: 2, DiskFreeMiB: 50000})
	must(t, err)
	if tel.Host.Telemetry.ReportSeq != 2 || tel.Host.Telemetry.DiskFreeMiB != 50000 {
		t.Fatalf("telemetry: %+v", tel.Host.Telemetry)
	}
	_, err = r.Telemetry(ctx, client.TelemetryRequest{HostID: host, ReportSeq: 1, DiskFreeMiB: 1})
	wantCode(t, err, errs.CodeConflict)

	profiles, err := r.Profiles(ctx, client.Linearizable)
	must(t, err)
	same, err := r.SetProfiles(ctx, client.ProfilesRequest{Profiles: profileSpecs(profiles.Profiles)})
	must(t, err)
	if same.Changed || same.Digest != profiles.Digest {
		t.Fatalf("the same profile set again: %+v, was %+v", same, profiles)
	}

	q, err := r.Query(ctx, client.ReservationQueryRequest{TenantRef: tenant, HostID: host})
	must(t, err)
	if len(q.Hosts) != 1 || q.Hosts[0].HostID != host || q.Hosts[0].Free.CPUMillis != 8000 || len(q.Reservations) != 0 {
		t.Fatalf("query: %+v", q)
	}
	rec, err := r.Reclaim(ctx, client.HostReclaimRequest{HostID: host})
	must(t, err)
	if len(rec.ReclaimedIDs) != 0 {
		t.Fatalf("reclaim with nothing expired: %+v", rec)
	}
	_, err = r.Reserve(ctx, client.HostReserveRequest{TenantRef: tenant, WorkItemID: "nope", Attempt: 1, Fence: 1})
	wantCode(t, err, errs.CodeNotFound)
	_, err = r.Release(ctx, client.HostReleaseRequest{TenantRef: tenant, WorkItemID: "nope", Attempt: 1, Fence: 1, ReservationID: "r"})
	wantCode(t, err, errs.CodeNotFound)
	_, err = r.RewriteExtension(ctx, client.RewriteExtensionRequest{TenantRef: tenant, WorkItemID: "nope", Extension: []byte(`{}`)})
	if err == nil {
		t.Fatal("rewrote the extension of no item")
	}
}

// profileSpecs are the profiles of a set as a request gives them.
func profileSpecs(ps []client.ProfileStatus) []client.Profile {
	out := []client.Profile{}
	for _, p := range ps {
		out = append(out, client.Profile{Name: p.Name, Version: p.Version, Weights: p.Weights, Max: p.Max,
			Fairness: p.Fairness, Disk: p.Disk, TelemetryMaxAgeMs: p.TelemetryMaxAgeMs, Mode: p.Mode})
	}
	return out
}

// Hosts pages the shared hosts in host_id order, Limit a page, until a
// page without NextCursor; each with what is free and its telemetry age.
func TestReservationHosts(t *testing.T) {
	ctx, r := ctxOf(t), newClient(t, "ops").Reservations()
	prefix, tenant := unique(t), unique(t)
	for _, id := range []string{prefix + "-c", prefix + "-a", prefix + "-b"} {
		_, err := r.PutHost(ctx, client.PutHostRequest{HostID: id, Labels: map[string]string{},
			Capacity: client.Dimensions{CPUMillis: 2000, MemoryMiB: 1024, DiskMiB: 1024, Processes: 4}})
		must(t, err)
	}
	var mine []client.HostStatus
	q := client.HostQuery{TenantRef: tenant, PageQuery: client.PageQuery{Limit: 2}}
	for pages := 0; ; pages++ {
		if pages > 64 { // 128 hosts at most, two a page
			t.Fatalf("paging does not end")
		}
		page, err := r.Hosts(ctx, q)
		must(t, err)
		if len(page.Hosts) > 2 || page.NowMs == 0 {
			t.Fatalf("a page of limit 2: %+v", page)
		}
		for _, h := range page.Hosts {
			if strings.HasPrefix(h.HostID, prefix+"-") {
				mine = append(mine, h)
			}
		}
		if q.After = page.NextCursor; q.After == "" {
			break
		}
	}
	if len(mine) != 3 || mine[0].HostID != prefix+"-a" || mine[2].HostID != prefix+"-c" {
		t.Fatalf("the hosts put, in host_id order: %+v", mine)
	}
	if h := mine[0]; h.Free.CPUMillis != 2000 || h.TelemetryAgeMs != -1 || h.Labels == nil {
		t.Fatalf("a host never reported: %+v", h)
	}
	_, err := r.Hosts(ctx, client.HostQuery{TenantRef: tenant, PageQuery: client.PageQuery{Limit: 129, Consistency: client.Stale}})
	wantCode(t, err, errs.CodeInvalid)
}
