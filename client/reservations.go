package client

import (
	"context"
	"net/http"
)

// Reservations is host resource reservation (/v1/workitems/...): a
// claimed work item reserves a shared host (capacity in four
// dimensions, labels, disk watermark, exclusivity, concurrency,
// fairness) in the same command that checks its claim's attempt and
// fence.
//
// A refusal is errs.Conflict with detail reason (capacity,
// no_eligible_host, branch_exclusive, ...). Each call is identified by
// what it names (the claim's attempt and fence, a telemetry ReportSeq, a
// host's ExpectedEpoch), so a repeat after an unknown outcome is safe.
type Reservations struct{ c *Client }

// PutHost adds or changes a shared host (controller of every tenant);
// Created for a new one. Another epoch is errs.StaleEpoch.
func (s *Reservations) PutHost(ctx context.Context, req PutHostRequest) (*HostResult, error) {
	return do[HostResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/hosts", req))
}

// Telemetry reports a host's free disk; ReportSeq must rise (else
// errs.Conflict, reason stale_report).
func (s *Reservations) Telemetry(ctx context.Context, req TelemetryRequest) (*HostResult, error) {
	return do[HostResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/hosts/telemetry", req))
}

// Reserve reserves a host for a claim (the one named, or the eligible
// host with the most free weighted capacity). The same claim again
// answers its reservation, unchanged.
func (s *Reservations) Reserve(ctx context.Context, req HostReserveRequest) (*ReservationResult, error) {
	return do[ReservationResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/reserve", req))
}

// Release ends a reservation before its claim ends; an ended one
// answers unchanged.
func (s *Reservations) Release(ctx context.Context, req HostReleaseRequest) (*ReservationResult, error) {
	return do[ReservationResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/release", req))
}

// Reclaim ends reservations whose claim expired (at most 8 x MaxCount
// examined; 0: 128); go on with NextCursor.
func (s *Reservations) Reclaim(ctx context.Context, req HostReclaimRequest) (*ReservationReclaimResult, error) {
	if req.MaxCount == 0 {
		req.MaxCount = defaultMaxCount
	}
	return do[ReservationReclaimResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/reclaim", req))
}

// Query returns one page across reservations, hosts (with use, free and
// telemetry age) and fairness debts (MaxCount 0: 128).
func (s *Reservations) Query(ctx context.Context, req ReservationQueryRequest) (*ReservationQueryResult, error) {
	if req.MaxCount == 0 {
		req.MaxCount = defaultMaxCount
	}
	return do[ReservationQueryResult](ctx, s.c, postRead("/v1/workitems/reservations/query", req))
}

// HostQuery selects the hosts Hosts pages through: any reader of
// TenantRef reads them all (hosts are every tenant's).
type HostQuery struct {
	TenantRef string
	PageQuery
}

// Hosts returns one page (Limit 1..128; 0: 128) of the shared hosts in
// host_id order, each with its use, what is free and its telemetry age
// (-1: never reported); go on with After = NextCursor.
func (s *Reservations) Hosts(ctx context.Context, q HostQuery) (*HostPage, error) {
	return do[HostPage](ctx, s.c, get("/v1/workitems/hosts", q.params("tenant_ref", q.TenantRef)))
}

// Profiles returns the reservation profile set.
func (s *Reservations) Profiles(ctx context.Context, cons Consistency) (*Profiles, error) {
	return do[Profiles](ctx, s.c, get("/v1/workitems/profiles", params("consistency", string(cons))))
}

// SetProfiles replaces the whole profile set (admin; at most 64).
func (s *Reservations) SetProfiles(ctx context.Context, req ProfilesRequest) (*Profiles, error) {
	return do[Profiles](ctx, s.c, repeat(http.MethodPut, "/v1/workitems/profiles", req))
}

// RewriteExtension sets the reservation record of an item that has none
// (admin), with the item's exact current fence (0 if never claimed).
func (s *Reservations) RewriteExtension(ctx context.Context, req RewriteExtensionRequest) (*ItemResult, error) {
	return do[ItemResult](ctx, s.c, repeat(http.MethodPost, "/v1/workitems/extension", req))
}
