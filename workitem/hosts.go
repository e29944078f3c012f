package workitem

import (
	"maps"
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// hostCmd is the payload of CmdPutHost; telemetryCmd of CmdTelemetry.
type hostCmd struct {
	HostID        string            `msgpack:"host_id"`
	Labels        map[string]string `msgpack:"labels"`
	Capacity      Dimensions        `msgpack:"capacity"`
	ExpectedEpoch *uint64           `msgpack:"expected_epoch"`
}

type telemetryCmd struct {
	HostID      string `msgpack:"host_id"`
	ReportSeq   uint64 `msgpack:"report_seq"`
	DiskFreeMiB int64  `msgpack:"disk_free_mib"`
}

func (c *hostCmd) validate() error {
	if err := opaque("host_id", c.HostID); err != nil {
		return err
	}
	if len(c.Labels) > MaxHostLabels {
		return fieldErr("labels", "holds %d labels, more than %d", len(c.Labels), MaxHostLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
		if err := opaque("labels", k); err != nil {
			return err
		}
		if err := opaque("labels."+k, c.Labels[k]); err != nil {
			return err
		}
	}
	return checkDimensions("capacity", c.Capacity)
}

func (c *telemetryCmd) validate() error {
	if err := opaque("host_id", c.HostID); err != nil {
		return err
	}
	if c.ReportSeq == 0 {
		return fieldErr("report_seq", "must be at least 1")
	}
	return checkRange("disk_free_mib", c.DiskFreeMiB, 0, extension.MaxDimension)
}

func getHost(s fsm.Store, id string) (*Host, error) {
	raw, err := s.First(tableHosts, "id", id)
	if err != nil {
		return nil, internal("read host", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*Host), nil
}

// hosts lists every host in host_id order (at most MaxHosts).
func hosts(s fsm.Store) ([]*Host, error) {
	it, err := s.Get(tableHosts, "id")
	if err != nil {
		return nil, internal("scan hosts", err)
	}
	var out []*Host
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*Host))
	}
	return out, nil
}

// putHostV2 is the version of workitem_host_put from which a change of
// a registered host (a re-registration: its epoch advances) resets its
// report sequence, so a host agent that restarts counts report_seq
// from 1 again after registering; the last report's free disk and time
// stay until a new report replaces them. Version 1 kept the sequence,
// and a restarted agent's reports were stale_report for good.
const putHostV2 = 2

// applyPutHost registers a host or changes its labels and capacity
// (controllers of every tenant). The epoch becomes the command's log
// index: it only grows, also across a restore, so expected_epoch is a
// safe compare-and-set. Capacity never drops below the current use.
func applyPutHost(tx *fsm.Tx, _ *log.Command, c *hostCmd) (any, error) {
	old, err := getHost(tx, c.HostID)
	if err != nil {
		return nil, err
	}
	var epoch uint64
	if old != nil {
		epoch = old.Epoch
	}
	if c.ExpectedEpoch != nil && *c.ExpectedEpoch != epoch {
		e := errs.Errorf(errs.CodeStaleEpoch, "host %q is at epoch %d; %d was expected", c.HostID, epoch, *c.ExpectedEpoch)
		e.Detail = map[string]any{"epoch": epoch}
		return nil, e
	}
	h := Host{HostID: c.HostID}
	if old == nil {
		all, err := hosts(tx)
		if err != nil {
			return nil, err
		}
		if len(all) >= MaxHosts {
			return nil, errs.Errorf(errs.CodeExhausted, "%d hosts are registered; at most %d", len(all), MaxHosts)
		}
	} else {
		h = *old
		err := c.Capacity.Each(func(name string, v int64) error {
			used := dim(old.Used, name)
			if v < used {
				e := errs.Errorf(errs.CodeConflict, "capacity.%s %d is below the %d that active reservations use", name, v, used)
				e.Detail = map[string]any{"field": "capacity." + name, "used": used}
				return e
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	h.Labels = map[string]string{}
	maps.Copy(h.Labels, c.Labels)
	h.Capacity, h.Epoch, h.UpdatedAtMs = c.Capacity, tx.Index, tx.Now
	if tx.EnabledVersion(CmdPutHost) >= putHostV2 {
		h.Telemetry.ReportSeq = 0
	}
	if err := tx.Insert(tableHosts, &h); err != nil {
		return nil, internal("store host", err)
	}
	if err := emitHost(tx, EventHostPut, &h); err != nil {
		return nil, err
	}
	return &HostResult{Host: h, Created: old == nil}, nil
}

// applyTelemetry records a host's report (controllers of every tenant):
// report_seq must be above the last (a stale report is refused), and
// FSM time stamps it.
func applyTelemetry(tx *fsm.Tx, _ *log.Command, c *telemetryCmd) (any, error) {
	old, err := getHost(tx, c.HostID)
	if err != nil {
		return nil, err
	}
	if old == nil {
		return nil, errs.Errorf(errs.CodeNotFound, "no host %q", c.HostID)
	}
	if c.ReportSeq <= old.Telemetry.ReportSeq {
		e := errs.Errorf(errs.CodeConflict, "stale report: host %q has report %d; %d is not newer", c.HostID, old.Telemetry.ReportSeq, c.ReportSeq)
		e.Detail = map[string]any{"reason": "stale_report", "report_seq": old.Telemetry.ReportSeq}
		return nil, e
	}
	h := *old
	h.Telemetry = Telemetry{ReportSeq: c.ReportSeq, DiskFreeMiB: c.DiskFreeMiB, ReportedAtMs: tx.Now}
	h.UpdatedAtMs = tx.Now
	if err := tx.Insert(tableHosts, &h); err != nil {
		return nil, internal("store host", err)
	}
	if err := emitHost(tx, EventHostTelemetry, &h); err != nil {
		return nil, err
	}
	return &HostResult{Host: h}, nil
}

// dim is d's dimension name.
func dim(d Dimensions, name string) int64 {
	switch name {
	case extension.DimCPU:
		return d.CPUMillis
	case extension.DimMemory:
		return d.MemoryMiB
	case extension.DimDisk:
		return d.DiskMiB
	case extension.DimProcesses:
		return d.Processes
	}
	return 0 // unreachable: names come from Dimensions.Each
}
