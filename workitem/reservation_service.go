package workitem

import (
	"bytes"
	"context"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/log"
)

// The reservation half of Service. Refusals of reserve are conflicts
// (409) with detail.reason (the Refuse* constants); the claim checks
// answer stale_fence, forbidden or expired as complete does.

// PutHost registers or changes a shared host (controllers of every
// tenant).
func (s *Service) PutHost(ctx context.Context, req PutHostRequest) (*HostResult, error) {
	cmd := hostCmd{HostID: req.HostID, Labels: req.Labels, Capacity: req.Capacity, ExpectedEpoch: req.ExpectedEpoch}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	var out HostResult
	if _, err := s.propose(ctx, log.Command{Type: CmdPutHost}, cmd, &out); err != nil {
		return nil, err
	}
	out.Host.tidy()
	return &out, nil
}

// ReportTelemetry records a host's free disk (controllers of every
// tenant).
func (s *Service) ReportTelemetry(ctx context.Context, req TelemetryRequest) (*HostResult, error) {
	cmd := telemetryCmd(req)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	var out HostResult
	if _, err := s.propose(ctx, log.Command{Type: CmdTelemetry}, cmd, &out); err != nil {
		return nil, err
	}
	out.Host.tidy()
	return &out, nil
}

// SetProfiles replaces the profile set (admins of every tenant). No
// node's --reservation-profiles file undoes it (see seedProfiles).
func (s *Service) SetProfiles(ctx context.Context, req ProfilesRequest) (*ProfilesResult, error) {
	return s.setProfiles(ctx, profilesCmd{Profiles: req.Profiles}, 1)
}

// seedProfiles proposes a --reservation-profiles file's set: the
// cluster takes it only when it has no set yet or the file's
// file_version is above every one it took (else the answer is Kept).
// It needs version 2 of the command, so a cluster that does not enable
// it yet answers unavailable.
func (s *Service) seedProfiles(ctx context.Context, f ProfileFile) (*ProfilesResult, error) {
	return s.setProfiles(ctx, profilesCmd{Profiles: f.Profiles, Seed: true, FileVersion: f.FileVersion}, profilesV2)
}

func (s *Service) setProfiles(ctx context.Context, cmd profilesCmd, version uint16) (*ProfilesResult, error) {
	if cmd.Profiles == nil {
		cmd.Profiles = []Profile{}
	}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	var out ProfilesResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdSetProfiles, Version: version}, cmd, &out); err != nil {
		return nil, err
	}
	out.tidy()
	return &out, nil
}

// Profiles reads the profile set and each profile's completeness.
func (s *Service) Profiles(ctx context.Context, c fsm.Consistency) (*ProfilesResult, error) {
	var out ProfilesResult
	if err := fsm.Ask(ctx, s.r, QueryProfiles, c == fsm.Stale, struct{}{}, &out); err != nil {
		return nil, err
	}
	out.tidy()
	return &out, nil
}

// Reserve reserves host resources for a claimed item (see applyReserve).
func (s *Service) Reserve(ctx context.Context, req ReserveRequest) (*ReservationResult, error) {
	cmd := reserveCmd(req)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	return s.reservation(ctx, log.Command{Type: CmdReserve}, cmd)
}

// Release frees a reservation, fenced by the claim's attempt and fence.
func (s *Service) Release(ctx context.Context, req ReleaseRequest) (*ReservationResult, error) {
	cmd := releaseCmd(req)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	return s.reservation(ctx, log.Command{Type: CmdRelease}, cmd)
}

func (s *Service) reservation(ctx context.Context, env log.Command, cmd any) (*ReservationResult, error) {
	var out ReservationResult
	if _, err := s.propose(ctx, env, cmd, &out); err != nil {
		return nil, err
	}
	out.Reservation.Keys.tidy()
	return &out, nil
}

// Reclaim ends reservations whose claim is over.
func (s *Service) Reclaim(ctx context.Context, req ReclaimRequest) (*ReclaimResult, error) {
	cmd := reclaimCmd(req)
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	var out ReclaimResult
	if _, err := s.propose(ctx, log.Command{Type: CmdReclaim}, cmd, &out); err != nil {
		return nil, err
	}
	out.ReclaimedIDs = nonNil(out.ReclaimedIDs)
	return &out, nil
}

// Query reads one page of the native status (see QueryRequest);
// max_count is required (1..MaxQueryPage), as reclaim's is.
func (s *Service) Query(ctx context.Context, req QueryRequest, c fsm.Consistency) (*QueryResult, error) {
	q := queryCmd(req)
	if err := q.validate(); err != nil {
		return nil, err
	}
	var out QueryResult
	if err := fsm.Ask(ctx, s.r, QueryReservations, c == fsm.Stale, q, &out); err != nil {
		return nil, err
	}
	out.tidy()
	return &out, nil
}

// Hosts reads one page of the shared hosts in host_id order, each with
// its use, what is free and its telemetry age (see HostsRequest).
func (s *Service) Hosts(ctx context.Context, req HostsRequest, c fsm.Consistency) (*HostPage, error) {
	q := hostsCmd(req)
	if q.Limit == 0 {
		q.Limit = MaxQueryPage
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	var out HostPage
	if err := fsm.Ask(ctx, s.r, QueryHosts, c == fsm.Stale, q, &out); err != nil {
		return nil, err
	}
	if out.Hosts == nil {
		out.Hosts = []HostStatus{}
	}
	for i := range out.Hosts {
		out.Hosts[i].Host.tidy()
	}
	return &out, nil
}

// RewriteExtension sets the extension of an item that has none (admins).
func (s *Service) RewriteExtension(ctx context.Context, req RewriteExtensionRequest) (*ItemResult, error) {
	raw := bytes.TrimSpace(req.Extension)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fieldErr("extension", "must be a JSON object")
	}
	c, err := canon.JSON(raw)
	if err != nil {
		return nil, fieldErr("extension", "%v", err)
	}
	cmd := rewriteCmd{TenantRef: req.TenantRef, WorkItemID: req.WorkItemID, Fence: req.Fence, Extension: c}
	if err := cmd.validate(newestRules); err != nil {
		return nil, err
	}
	return s.item(ctx, log.Command{Type: CmdRewriteExtension}, cmd)
}

// tidy makes empty lists and maps encode as [] and {}.
func (h *Host) tidy() {
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
}

func (k *Keys) tidy() { k.AntiAffinity = nonNil(k.AntiAffinity) }

func (r *ProfilesResult) tidy() {
	if r.Profiles == nil {
		r.Profiles = []ProfileStatus{}
	}
	for i := range r.Profiles {
		r.Profiles[i].Missing = nonNil(r.Profiles[i].Missing)
	}
}

func (r *QueryResult) tidy() {
	if r.Reservations == nil {
		r.Reservations = []Reservation{}
	}
	for i := range r.Reservations {
		r.Reservations[i].Keys.tidy()
	}
	if r.Hosts == nil {
		r.Hosts = []HostStatus{}
	}
	for i := range r.Hosts {
		r.Hosts[i].Host.tidy()
	}
	if r.Fairness == nil {
		r.Fairness = []Debt{}
	}
}
