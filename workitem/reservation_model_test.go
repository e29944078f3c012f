package workitem_test

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
	"github.com/google/go-cmp/cmp"
)

// The reference model of host resource reservation: plain maps and the
// rules of the issue, one command at a time, for items of tenant t
// without dependencies or deadlines (admission has its own model). It
// keeps what the FSM stores (hosts, profiles, reservations, debts with
// their anchors) and derives the keys from the active reservations.
// TestReservationModel (reservation_machine_test.go) drives both.

type rItem struct {
	id                  string
	ext                 *extension.Extension // nil: admitted without one
	status              string
	attempt, maxAttempt int64
	fence               uint64
	claimExpires        int64
	claimedBy           string
}

type rDebtKey struct{ profile, group string }

type resModel struct {
	clock, now int64
	index      uint64
	profiles   map[[2]string]workitem.Profile
	hosts      map[string]*workitem.Host
	items      map[string]*rItem
	res        map[string]*workitem.Reservation
	debts      map[rDebtKey]*storedDebt
}

func newResModel(clock int64) *resModel {
	return &resModel{clock: clock, profiles: map[[2]string]workitem.Profile{}, hosts: map[string]*workitem.Host{},
		items: map[string]*rItem{}, res: map[string]*workitem.Reservation{}, debts: map[rDebtKey]*storedDebt{}}
}

func (m *resModel) apply() {
	m.index++
	m.now = max(m.now, m.clock)
}

// rErr is a decided failure: the code and detail.reason.
type rErr struct {
	code   errs.Code
	reason string
}

func (e *rErr) Error() string { return fmt.Sprintf("%s %s", e.code, e.reason) }

func rFail(code errs.Code) *rErr  { return &rErr{code: code} }
func rRefuse(reason string) *rErr { return &rErr{code: errs.CodeConflict, reason: reason} }
func isFleet(p identity.Principal) bool {
	return p.HasRole(identity.RoleController) && (p.Trusted() || slices.Contains(p.Tenants, "*"))
}
func mayAct(p identity.Principal, by string) bool {
	return by == p.ID || p.HasRole(identity.RoleController)
}

func (m *resModel) putHost(p identity.Principal, r workitem.PutHostRequest) (*workitem.HostResult, *rErr) {
	if !isFleet(p) {
		return nil, rFail(errs.CodeForbidden)
	}
	old := m.hosts[r.HostID]
	var epoch uint64
	if old != nil {
		epoch = old.Epoch
	}
	if r.ExpectedEpoch != nil && *r.ExpectedEpoch != epoch {
		return nil, rFail(errs.CodeStaleEpoch)
	}
	h := &workitem.Host{HostID: r.HostID}
	if old == nil {
		if len(m.hosts) >= workitem.MaxHosts {
			return nil, rFail(errs.CodeExhausted)
		}
	} else {
		over := r.Capacity.Sub(old.Used)
		if over.CPUMillis < 0 || over.MemoryMiB < 0 || over.DiskMiB < 0 || over.Processes < 0 {
			return nil, rFail(errs.CodeConflict)
		}
		c := *old
		h = &c
	}
	h.Labels = maps.Clone(r.Labels)
	if h.Labels == nil {
		h.Labels = map[string]string{}
	}
	h.Capacity, h.Epoch, h.UpdatedAtMs = r.Capacity, m.index, m.now
	h.Telemetry.ReportSeq = 0 // a re-registration: the agent counts again
	m.hosts[r.HostID] = h
	return &workitem.HostResult{Host: *h, Created: old == nil}, nil
}

func (m *resModel) telemetry(p identity.Principal, r workitem.TelemetryRequest) (*workitem.HostResult, *rErr) {
	if !isFleet(p) {
		return nil, rFail(errs.CodeForbidden)
	}
	h := m.hosts[r.HostID]
	switch {
	case h == nil:
		return nil, rFail(errs.CodeNotFound)
	case r.ReportSeq <= h.Telemetry.ReportSeq:
		return nil, &rErr{code: errs.CodeConflict, reason: "stale_report"}
	}
	h.Telemetry = workitem.Telemetry{ReportSeq: r.ReportSeq, DiskFreeMiB: r.DiskFreeMiB, ReportedAtMs: m.now}
	h.UpdatedAtMs = m.now
	return &workitem.HostResult{Host: *h}, nil
}

func (m *resModel) setProfiles(p identity.Principal, ps []workitem.Profile) (bool, *rErr) {
	if !p.HasRole(identity.RoleAdmin) {
		return false, rFail(errs.CodeForbidden)
	}
	next := map[[2]string]workitem.Profile{}
	for _, x := range ps {
		next[[2]string{x.Name, x.Version}] = x
	}
	if maps.Equal(next, m.profiles) {
		return false, nil
	}
	m.profiles = next
	return true, nil
}

func (m *resModel) submit(id string, ext *extension.Extension, maxAttempts int64) {
	m.items[id] = &rItem{id: id, ext: ext, status: workitem.StatusPending, maxAttempt: maxAttempts}
}

func (m *resModel) claim(p identity.Principal, id string, ttl int64) *rErr {
	it := m.items[id]
	if it == nil || it.status != workitem.StatusPending {
		return rFail(errs.CodeNotFound)
	}
	it.status, it.attempt, it.fence, it.claimExpires, it.claimedBy = workitem.StatusClaimed, it.attempt+1, m.index, m.now+ttl, p.ID
	return nil
}

// active is the item's active reservation.
func (m *resModel) active(id string) *workitem.Reservation {
	for _, r := range m.res {
		if r.WorkItemID == id && r.Status == workitem.ReservationActive {
			return r
		}
	}
	return nil
}

func (m *resModel) debtAt(d *storedDebt) int64 {
	if d == nil {
		return 0
	}
	elapsed := m.now - d.AnchorMs
	if elapsed <= 0 {
		return d.DebtMilli
	}
	return max(0, d.DebtMilli-elapsed*d.DecayPerS)
}

func dimsList(d workitem.Dimensions) []int64 {
	return []int64{d.CPUMillis, d.MemoryMiB, d.DiskMiB, d.Processes}
}

// judge is why host h cannot take e under prof ("" if it can), and
// whether the reason is a missing label.
func (m *resModel) judge(h *workitem.Host, e *extension.Extension, prof workitem.Profile) (string, bool) {
	free := dimsList(h.Capacity.Sub(h.Used))
	for i, v := range dimsList(e.Dimensions) {
		if v > free[i] {
			return workitem.RefuseCapacity, false
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.HostLabels)) {
		if h.Labels[k] != e.HostLabels[k] {
			return workitem.RefuseNoEligibleHost, true
		}
	}
	t := h.Telemetry
	if t.ReportedAtMs == 0 || m.now-t.ReportedAtMs > prof.TelemetryMaxAgeMs {
		return workitem.RefuseTelemetryStale, false
	}
	if t.DiskFreeMiB-t.DiskReservedMiB-e.Dimensions.DiskMiB < max(prof.Disk.MinFreeMiB, e.Disk.MinFreeMiB) {
		return workitem.RefuseDiskWatermark, false
	}
	for _, r := range m.res {
		if r.Status == workitem.ReservationActive && r.HostID == h.HostID {
			for _, k := range e.AntiAffinity {
				if slices.Contains(r.Keys.AntiAffinity, k) {
					return workitem.RefuseAntiAffinity, false
				}
			}
		}
	}
	return "", false
}

func (m *resModel) reserve(p identity.Principal, r workitem.ReserveRequest) (*workitem.Reservation, *rErr) {
	it := m.items[r.WorkItemID]
	if it == nil {
		return nil, rFail(errs.CodeNotFound)
	}
	if held := m.active(it.id); held != nil && held.Attempt == r.Attempt && held.Fence == r.Fence {
		// Asked again: the reservation held, to a live claim only (v3).
		switch {
		case it.status != workitem.StatusClaimed || it.attempt != r.Attempt || it.fence != r.Fence:
			return nil, rFail(errs.CodeStaleFence)
		case !mayAct(p, it.claimedBy):
			return nil, rFail(errs.CodeForbidden)
		case m.now >= it.claimExpires:
			return nil, rFail(errs.CodeExpired)
		case r.HostID != "" && r.HostID != held.HostID:
			return nil, rFail(errs.CodeConflict)
		}
		return held, nil
	}
	switch {
	case it.status != workitem.StatusClaimed || it.attempt != r.Attempt || it.fence != r.Fence:
		return nil, rFail(errs.CodeStaleFence)
	case !mayAct(p, it.claimedBy):
		return nil, rFail(errs.CodeForbidden)
	case m.now >= it.claimExpires:
		return nil, rFail(errs.CodeExpired)
	case it.ext == nil:
		return nil, rRefuse(workitem.RefuseNotReservable)
	}
	e := it.ext
	prof, ok := m.profiles[[2]string{e.Profile.Name, e.Profile.Version}]
	switch {
	case !ok || prof.Mode == workitem.ModeDark || prof.Mode == workitem.ModeShadow:
		return nil, rRefuse(workitem.RefuseProfileDisabled)
	case prof.Mode == "" || prof.Fairness.DecayPerS == 0 || prof.Weights.CPU == 0 || prof.TelemetryMaxAgeMs == 0:
		return nil, rRefuse(workitem.RefuseProfileIncomplete) // the only empty fields the machine draws
	}
	maxd := dimsList(prof.Max)
	for i, v := range dimsList(e.Dimensions) {
		if v > maxd[i] {
			return nil, rRefuse(workitem.RefuseCapacity)
		}
	}
	var host *workitem.Host
	if r.HostID != "" {
		host = m.hosts[r.HostID]
		if host == nil {
			return nil, rRefuse(workitem.RefuseNoEligibleHost)
		}
		if why, _ := m.judge(host, e, prof); why != "" {
			return nil, rRefuse(why)
		}
	} else {
		var best int64
		only, label, n := "", false, 0
		for _, id := range slices.Sorted(maps.Keys(m.hosts)) {
			h := m.hosts[id]
			why, byLabel := m.judge(h, e, prof)
			if why != "" {
				if n == 0 {
					only, label = why, byLabel
				} else if only != why || label != byLabel {
					only = ""
				}
				n++
				continue
			}
			f := h.Capacity.Sub(h.Used)
			w := prof.Weights
			score := w.CPU*f.CPUMillis + w.Memory*f.MemoryMiB + w.Disk*f.DiskMiB + w.Process*f.Processes
			if host == nil || score > best {
				host, best = h, score
			}
		}
		if host == nil {
			if only == "" || label {
				return nil, rRefuse(workitem.RefuseNoEligibleHost)
			}
			return nil, rRefuse(only)
		}
	}
	branch := e.BranchIdentity()
	var repoHolder, branchHolder bool
	var repoShared, branchShared, conc, concLimit int64
	for _, x := range m.res {
		if x.Status != workitem.ReservationActive {
			continue
		}
		if x.Keys.Repository == e.Repository {
			if x.Keys.RepositoryExclusive {
				repoHolder = true
			} else {
				repoShared++
			}
			if branch != "" && x.Keys.Branch == branch {
				if x.Keys.BranchExclusive {
					branchHolder = true
				} else {
					branchShared++
				}
			}
		}
		if x.Keys.Concurrency == e.Concurrency.Key {
			conc, concLimit = conc+1, x.Keys.ConcurrencyLimit
		}
	}
	switch {
	case repoHolder || e.Exclusivity.Repository && repoShared > 0:
		return nil, rRefuse(workitem.RefuseRepositoryExclusive)
	case branch != "" && (branchHolder || e.Exclusivity.Branch && branchShared > 0):
		return nil, rRefuse(workitem.RefuseBranchExclusive)
	case conc > 0 && concLimit != e.Concurrency.Limit, conc >= e.Concurrency.Limit:
		return nil, rRefuse(workitem.RefuseConcurrencyLimit)
	}
	dk := rDebtKey{prof.Name, e.Fairness.Group}
	after := m.debtAt(m.debts[dk]) + e.Fairness.Cost*1000
	if after > prof.Fairness.MaxDebt*1000 {
		return nil, rRefuse(workitem.RefuseFairness)
	}
	res := &workitem.Reservation{ReservationID: fmt.Sprintf("rsv-%d", m.index), TenantRef: "t", WorkItemID: it.id, Attempt: it.attempt,
		Fence: it.fence, HeldBy: it.claimedBy, HostID: host.HostID, Dimensions: e.Dimensions, Keys: workitem.Keys{Repository: e.Repository,
			RepositoryExclusive: e.Exclusivity.Repository, Branch: branch, BranchExclusive: e.Exclusivity.Branch, Concurrency: e.Concurrency.Key,
			ConcurrencyLimit: e.Concurrency.Limit, AntiAffinity: append([]string{}, e.AntiAffinity...), FairnessGroup: e.Fairness.Group},
		ProfileName: prof.Name, ProfileVersion: prof.Version, Fingerprint: e.Fingerprint, FairnessCost: e.Fairness.Cost,
		FairnessDebtAfter: (after + 999) / 1000, Status: workitem.ReservationActive, CreatedAtMs: m.now, ExpiresAtMs: it.claimExpires, Index: m.index}
	m.res[res.ReservationID] = res
	host.Used = host.Used.Add(e.Dimensions)
	host.Reservations++
	host.Telemetry.DiskReservedMiB += e.Dimensions.DiskMiB
	if after > 0 {
		m.debts[dk] = &storedDebt{TenantRef: "t", Profile: prof.Name, Group: e.Fairness.Group, DebtMilli: after, AnchorMs: m.now, DecayPerS: prof.Fairness.DecayPerS}
	} else {
		delete(m.debts, dk)
	}
	return res, nil
}

// end ends an active reservation.
func (m *resModel) end(r *workitem.Reservation, status, reason string) {
	h := m.hosts[r.HostID]
	h.Used = h.Used.Sub(r.Dimensions)
	h.Reservations--
	r.Status, r.EndReason, r.EndedAtMs = status, reason, m.now
}

func (m *resModel) release(p identity.Principal, rq workitem.ReleaseRequest) (*workitem.Reservation, *rErr) {
	r := m.res[rq.ReservationID]
	switch {
	case r == nil || r.WorkItemID != rq.WorkItemID:
		return nil, rFail(errs.CodeNotFound)
	case r.Attempt != rq.Attempt || r.Fence != rq.Fence:
		return nil, rFail(errs.CodeStaleFence)
	}
	// Its holder (or a controller); one without (the embedding host's)
	// is its claimer's while the claim lasts.
	holder := r.HeldBy
	if it := m.items[rq.WorkItemID]; holder == "" && it != nil && it.status == workitem.StatusClaimed && it.fence == r.Fence {
		holder = it.claimedBy
	} else if holder == "" {
		holder = p.ID
	}
	if !mayAct(p, holder) {
		return nil, rFail(errs.CodeForbidden)
	}
	if r.Status == workitem.ReservationActive {
		m.end(r, workitem.ReservationReleased, workitem.EndReleased)
	}
	return r, nil
}

// endItem ends an in-flight item, and its claim's reservation.
func (m *resModel) endItem(it *rItem, status, why string) {
	if r := m.active(it.id); r != nil {
		m.end(r, workitem.ReservationEnded, why)
	}
	it.status = status
}

func (m *resModel) complete(p identity.Principal, id string, attempt int64, fence uint64) *rErr {
	it := m.items[id]
	switch {
	case it == nil:
		return rFail(errs.CodeNotFound)
	case it.attempt == attempt && it.fence == fence && it.status == workitem.StatusSucceeded && !mayAct(p, it.claimedBy):
		return rFail(errs.CodeForbidden)
	case it.attempt == attempt && it.fence == fence && it.status == workitem.StatusSucceeded:
		return nil
	case it.attempt == attempt && it.fence == fence && it.status != workitem.StatusClaimed && it.status != workitem.StatusPending:
		return rFail(errs.CodeConflict) // ended otherwise
	case it.status != workitem.StatusClaimed || it.attempt != attempt || it.fence != fence:
		return rFail(errs.CodeStaleFence)
	case !mayAct(p, it.claimedBy):
		return rFail(errs.CodeForbidden)
	case m.now >= it.claimExpires:
		return rFail(errs.CodeExpired)
	}
	m.endItem(it, workitem.StatusSucceeded, workitem.EndClaimEnded)
	return nil
}

func (m *resModel) cancel(id string) *rErr {
	it := m.items[id]
	switch {
	case it == nil:
		return rFail(errs.CodeNotFound)
	case it.status == workitem.StatusCancelled:
		return nil
	case it.status != workitem.StatusPending && it.status != workitem.StatusClaimed:
		return rFail(errs.CodeConflict)
	}
	m.endItem(it, workitem.StatusCancelled, workitem.EndClaimEnded)
	return nil
}

// due lists the active reservations past their claim's expiry in the
// reclaim order (expiry, then reservation id as a string).
func (m *resModel) due() []*workitem.Reservation {
	var out []*workitem.Reservation
	for _, r := range m.res {
		if r.Status == workitem.ReservationActive && r.ExpiresAtMs <= m.now {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.ExpiresAtMs < b.ExpiresAtMs || a.ExpiresAtMs == b.ExpiresAtMs && a.ReservationID < b.ReservationID
	})
	return out
}

func (m *resModel) reclaim(p identity.Principal, rq workitem.ReclaimRequest) ([]string, bool, *rErr) {
	if rq.TenantRef == "" && !isFleet(p) {
		return nil, false, rFail(errs.CodeForbidden)
	}
	ids := []string{}
	scanned := 0
	for _, r := range m.due() {
		if len(ids) == rq.MaxCount || scanned == 8*rq.MaxCount {
			return ids, true, nil
		}
		scanned++
		if rq.HostID == "" || r.HostID == rq.HostID {
			m.end(r, workitem.ReservationEnded, workitem.EndReclaimed)
			ids = append(ids, r.ReservationID)
		}
	}
	return ids, false, nil
}

func (m *resModel) tick(budget int) {
	var expired []*rItem
	for _, it := range m.items {
		if it.status == workitem.StatusClaimed && it.claimExpires <= m.now {
			expired = append(expired, it)
		}
	}
	sort.Slice(expired, func(i, j int) bool {
		a, b := expired[i], expired[j]
		return a.claimExpires < b.claimExpires || a.claimExpires == b.claimExpires && a.id < b.id
	})
	for i, it := range expired {
		if i == budget {
			break
		}
		if it.attempt >= it.maxAttempt {
			m.endItem(it, workitem.StatusFailed, workitem.EndClaimExpired)
			continue
		}
		if r := m.active(it.id); r != nil {
			m.end(r, workitem.ReservationEnded, workitem.EndClaimExpired)
		}
		it.status, it.claimedBy, it.claimExpires = workitem.StatusPending, "", 0
	}
	var old []*workitem.Reservation
	for _, r := range m.res {
		if r.Status != workitem.ReservationActive && r.EndedAtMs <= m.now-workitem.ReservationRetention.Milliseconds() {
			old = append(old, r)
		}
	}
	sort.Slice(old, func(i, j int) bool {
		a, b := old[i], old[j]
		return a.EndedAtMs < b.EndedAtMs || a.EndedAtMs == b.EndedAtMs && a.ReservationID < b.ReservationID
	})
	for i, r := range old {
		if i == budget {
			break
		}
		delete(m.res, r.ReservationID)
	}
	var debts []*storedDebt
	for _, d := range m.debts {
		if d.AnchorMs <= m.now-1000 {
			debts = append(debts, d)
		}
	}
	sort.Slice(debts, func(i, j int) bool {
		a, b := debts[i], debts[j]
		return a.AnchorMs < b.AnchorMs || a.AnchorMs == b.AnchorMs && (a.Profile < b.Profile || a.Profile == b.Profile && a.Group < b.Group)
	})
	for i, d := range debts {
		if i == budget {
			break
		}
		if v := m.debtAt(d); v > 0 {
			d.DebtMilli, d.AnchorMs = v, m.now
		} else {
			delete(m.debts, rDebtKey{d.Profile, d.Group})
		}
	}
}

// compare lists how the stored state differs from the model.
func (m *resModel) compare(st resState) []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if st.Index != m.index || st.Now != m.now {
		badf("applied index %d at %d; the model is at %d, %d", st.Index, st.Now, m.index, m.now)
	}
	hosts := map[string]workitem.Host{}
	for _, h := range st.Hosts {
		h.Labels = nonNilMap(h.Labels)
		hosts[h.HostID] = h
	}
	want := map[string]workitem.Host{}
	for id, h := range m.hosts {
		want[id] = *h
	}
	if d := cmp.Diff(want, hosts); d != "" {
		badf("hosts (-model +stored):\n%s", d)
	}
	profiles := map[[2]string]workitem.Profile{}
	for _, p := range st.Profiles {
		profiles[[2]string{p.Name, p.Version}] = p
	}
	if d := cmp.Diff(m.profiles, profiles); d != "" {
		badf("profiles (-model +stored):\n%s", d)
	}
	res := map[string]workitem.Reservation{}
	for _, r := range st.Reservations {
		r.Keys.AntiAffinity = nonNil(r.Keys.AntiAffinity)
		res[r.ReservationID] = r
	}
	wantRes := map[string]workitem.Reservation{}
	for id, r := range m.res {
		wantRes[id] = *r
	}
	if d := cmp.Diff(wantRes, res); d != "" {
		badf("reservations (-model +stored):\n%s", d)
	}
	debts := map[rDebtKey]storedDebt{}
	for _, d := range st.Debts {
		debts[rDebtKey{d.Profile, d.Group}] = d
	}
	wantDebts := map[rDebtKey]storedDebt{}
	for k, d := range m.debts {
		wantDebts[k] = *d
	}
	if d := cmp.Diff(wantDebts, debts, cmp.AllowUnexported(rDebtKey{})); d != "" {
		badf("debts (-model +stored):\n%s", d)
	}
	for _, it := range st.Items {
		w := m.items[it.WorkItemID]
		if w == nil {
			badf("stored item %s the model does not have", it.WorkItemID)
			continue
		}
		var exp int64
		if it.Status == workitem.StatusClaimed {
			exp = it.ClaimExpiresAtMs
		}
		if w.status != it.Status || w.attempt != it.Attempt || w.fence != it.Fence || (w.status == workitem.StatusClaimed && (w.claimExpires != exp || w.claimedBy != it.ClaimedBy)) {
			badf("item %s: %s attempt %d fence %d exp %d by %q; the model's %+v", it.WorkItemID, it.Status, it.Attempt, it.Fence, exp, it.ClaimedBy, *w)
		}
	}
	if len(st.Items) != len(m.items) {
		badf("%d stored items; the model has %d", len(st.Items), len(m.items))
	}
	return bad
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

var _ = strings.TrimSpace
