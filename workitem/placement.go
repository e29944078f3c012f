package workitem

import (
	"errors"
	"maps"
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// A host is eligible for a reservation when, in this order: every
// dimension's use plus the demand fits its capacity (else capacity); it
// has every label the item asks for (else no_eligible_host); its
// telemetry is no older than the profile's telemetry_max_age_ms (else
// telemetry_stale); its reported free disk, less the disk reserved since
// that report and the demand, keeps the larger of the profile's and the
// item's min_free_mib (else disk_watermark); and no active reservation
// of the tenant on it holds one of the item's anti-affinity keys (else
// anti_affinity).

// placement is what judging a host needs.
type placement struct {
	s      fsm.Store
	now    int64
	tenant string
	ext    *extension.Extension
	prof   *Profile
	// labels are ext's host label keys in order, sorted once for every
	// host judged (newPlacement).
	labels []string
}

func newPlacement(tx *fsm.Tx, tenant string, ext *extension.Extension, prof *Profile) *placement {
	return &placement{s: tx, now: tx.Now, tenant: tenant, ext: ext, prof: prof, labels: slices.Sorted(maps.Keys(ext.HostLabels))}
}

// judge returns nil for an eligible host, a refusal (a conflict with
// detail.reason and detail.host_id) or an internal error.
func (p *placement) judge(h *Host) error {
	d := p.ext.Dimensions
	// Each dimension in Dimensions.Each's order, without a closure per
	// host (a reserve judges up to MaxHosts of them).
	free := h.Capacity.Sub(h.Used)
	for k, v := range [...]int64{d.CPUMillis, d.MemoryMiB, d.DiskMiB, d.Processes} {
		if f := [...]int64{free.CPUMillis, free.MemoryMiB, free.DiskMiB, free.Processes}[k]; v > f {
			name := dimNames[k]
			e := refuse(RefuseCapacity, "host %q has %d %s free; %d asked", h.HostID, f, name, v)
			e.Detail["dimension"], e.Detail["free"] = name, f
			return onHost(e, h)
		}
	}
	for _, k := range p.labels {
		if got, ok := h.Labels[k]; !ok || got != p.ext.HostLabels[k] {
			e := refuse(RefuseNoEligibleHost, "host %q lacks label %s=%s", h.HostID, k, p.ext.HostLabels[k])
			e.Detail["label"] = k
			return onHost(e, h)
		}
	}
	t := h.Telemetry
	if age := p.now - t.ReportedAtMs; t.ReportedAtMs == 0 || age > p.prof.TelemetryMaxAgeMs {
		e := refuse(RefuseTelemetryStale, "host %q last reported %d ms ago (never: report 0); the profile allows %d", h.HostID, age, p.prof.TelemetryMaxAgeMs)
		e.Detail["report_seq"] = t.ReportSeq
		return onHost(e, h)
	}
	mark := max(p.prof.Disk.MinFreeMiB, p.ext.Disk.MinFreeMiB)
	if left := t.DiskFreeMiB - t.DiskReservedMiB - d.DiskMiB; left < mark {
		e := refuse(RefuseDiskWatermark, "host %q would keep %d MiB of disk free; the watermark is %d", h.HostID, left, mark)
		e.Detail["free_after_mib"], e.Detail["watermark_mib"] = left, mark
		return onHost(e, h)
	}
	if err := checkAffinity(p.s, p.tenant, h.HostID, p.ext.AntiAffinity); err != nil {
		return onHost(err, h)
	}
	return nil
}

// dimNames are the dimensions' names in Dimensions.Each's order.
var dimNames = [...]string{extension.DimCPU, extension.DimMemory, extension.DimDisk, extension.DimProcesses}

func onHost(err error, h *Host) error {
	if e := refusal(err); e != nil {
		e.Detail["host_id"] = h.HostID
	}
	return err
}

// refusal is err as a reservation refusal, or nil for another error.
func refusal(err error) *errs.Error {
	var e *errs.Error
	if errors.As(err, &e) && e.Code == errs.CodeConflict && e.Detail["reason"] != nil {
		return e
	}
	return nil
}

// weightedFree is sum(weight x free) over the dimensions.
func weightedFree(h *Host, w Weights) int64 {
	free := h.Capacity.Sub(h.Used)
	return w.CPU*free.CPUMillis + w.Memory*free.MemoryMiB + w.Disk*free.DiskMiB + w.Process*free.Processes
}

// pickHost is the host named, if it is eligible, or else the eligible
// host with the most free weighted capacity (ties: the lowest host_id).
// When none is: the one reason every host gave, or no_eligible_host
// with each host's reason in detail.hosts.
func (p *placement) pickHost(named string) (*Host, error) {
	if named != "" {
		h, err := getHost(p.s, named)
		if err != nil {
			return nil, err
		}
		if h == nil {
			e := refuse(RefuseNoEligibleHost, "no host %q", named)
			e.Detail["host_id"] = named
			return nil, e
		}
		if err := p.judge(h); err != nil {
			return nil, err
		}
		return h, nil
	}
	all, err := hosts(p.s)
	if err != nil {
		return nil, err
	}
	var best *Host
	var bestScore int64
	reasons := map[string]any{}
	var only string
	for _, h := range all {
		if err := p.judge(h); err != nil {
			e := refusal(err)
			if e == nil {
				return nil, err
			}
			r, _ := e.Detail["reason"].(string)
			if _, label := e.Detail["label"]; label {
				r = "host_labels"
			}
			if len(reasons) == 0 {
				only = r
			} else if only != r {
				only = ""
			}
			reasons[h.HostID] = r
			continue
		}
		if s := weightedFree(h, p.prof.Weights); best == nil || s > bestScore {
			best, bestScore = h, s
		}
	}
	if best != nil {
		return best, nil
	}
	reason := RefuseNoEligibleHost
	if only != "" && only != "host_labels" {
		reason = only
	}
	e := refuse(reason, "none of %d hosts is eligible", len(all))
	e.Detail["hosts"] = reasons
	return nil, e
}
