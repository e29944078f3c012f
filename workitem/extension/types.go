package extension

import "encoding/json"

// SchemaVersion is the only version this package reads.
const SchemaVersion = "1"

// Extension is metadata.resource_reservation: the complete admission
// assertion of one work item.
type Extension struct {
	SchemaVersion string      `json:"schema_version"`
	Profile       ProfileRef  `json:"profile"`
	Dimensions    Dimensions  `json:"dimensions"`
	Concurrency   Concurrency `json:"concurrency"`
	Exclusivity   Exclusivity `json:"exclusivity"`
	Repository    string      `json:"repository"`
	// Branch is optional; exclusivity.branch needs it.
	Branch string `json:"branch,omitempty"`
	// BaseRef is optional; without Branch it is the branch identity of
	// non-exclusive work, and it is always kept as given.
	BaseRef        string            `json:"base_ref,omitempty"`
	Fairness       Fairness          `json:"fairness"`
	HostLabels     map[string]string `json:"host_labels"`
	AntiAffinity   []string          `json:"anti_affinity"`
	TargetPolicies []string          `json:"target_policies"`
	Disk           DiskPolicy        `json:"disk"`
	// Fingerprint is "v1:" + 64 lowercase hex digits (see Seal).
	Fingerprint string `json:"fingerprint"`
}

// ProfileRef names the reviewed profile (name and version) the item is
// admitted under.
type ProfileRef struct {
	Name    string `json:"name" msgpack:"name"`
	Version string `json:"version" msgpack:"version"`
}

// Dimensions are the four resource dimensions: a demand, a host's
// capacity or use, or a profile's per-reservation maximum.
type Dimensions struct {
	CPUMillis int64 `json:"cpu_millis" msgpack:"cpu_millis"`
	MemoryMiB int64 `json:"memory_mib" msgpack:"memory_mib"`
	DiskMiB   int64 `json:"disk_mib" msgpack:"disk_mib"`
	Processes int64 `json:"processes" msgpack:"processes"`
}

// Names of the dimensions, in the order Each visits them.
const (
	DimCPU       = "cpu_millis"
	DimMemory    = "memory_mib"
	DimDisk      = "disk_mib"
	DimProcesses = "processes"
)

// Each calls f with every dimension's name and value, in a fixed order,
// and stops at the first error.
func (d Dimensions) Each(f func(name string, v int64) error) error {
	for _, x := range []struct {
		name string
		v    int64
	}{{DimCPU, d.CPUMillis}, {DimMemory, d.MemoryMiB}, {DimDisk, d.DiskMiB}, {DimProcesses, d.Processes}} {
		if err := f(x.name, x.v); err != nil {
			return err
		}
	}
	return nil
}

// Add is d + o, dimension by dimension.
func (d Dimensions) Add(o Dimensions) Dimensions {
	return Dimensions{d.CPUMillis + o.CPUMillis, d.MemoryMiB + o.MemoryMiB, d.DiskMiB + o.DiskMiB, d.Processes + o.Processes}
}

// Sub is d - o, dimension by dimension.
func (d Dimensions) Sub(o Dimensions) Dimensions {
	return Dimensions{d.CPUMillis - o.CPUMillis, d.MemoryMiB - o.MemoryMiB, d.DiskMiB - o.DiskMiB, d.Processes - o.Processes}
}

// Concurrency caps how many active reservations of the tenant share Key.
type Concurrency struct {
	Key   string `json:"key"`
	Limit int64  `json:"limit"`
}

// Exclusivity says whether the work needs its repository, or its
// branch, to itself.
type Exclusivity struct {
	Repository bool `json:"repository"`
	Branch     bool `json:"branch"`
}

// Fairness charges Cost to the debt of Group.
type Fairness struct {
	Group string `json:"group"`
	Cost  int64  `json:"cost"`
}

// DiskPolicy is the free disk a host must keep after the reservation
// (the larger of this and the profile's).
type DiskPolicy struct {
	MinFreeMiB int64 `json:"min_free_mib"`
}

// BranchIdentity is the branch the work holds: Branch, else BaseRef
// (non-exclusive work only), else "" (none).
func (e *Extension) BranchIdentity() string {
	if e.Branch != "" {
		return e.Branch
	}
	return e.BaseRef
}

// Seal fills in schema_version (if empty) and the fingerprint, and
// returns the record as canonical JSON, ready for
// metadata.resource_reservation. Nil maps and lists become empty ones.
// It checks the record as Parse would.
func Seal(e Extension) (*Extension, json.RawMessage, error) {
	if e.SchemaVersion == "" {
		e.SchemaVersion = SchemaVersion
	}
	if e.HostLabels == nil {
		e.HostLabels = map[string]string{}
	}
	if e.AntiAffinity == nil {
		e.AntiAffinity = []string{}
	}
	if e.TargetPolicies == nil {
		e.TargetPolicies = []string{}
	}
	e.Fingerprint = ""
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, nil, invalid("", "encode: %v", err)
	}
	fields, err := topFields(raw)
	if err != nil {
		return nil, nil, err
	}
	if e.Fingerprint, err = fingerprint(fields); err != nil {
		return nil, nil, err
	}
	if raw, err = json.Marshal(e); err != nil {
		return nil, nil, invalid("", "encode: %v", err)
	}
	out, err := canonical(raw)
	if err != nil {
		return nil, nil, err
	}
	parsed, err := Parse(out)
	if err != nil {
		return nil, nil, err
	}
	return parsed, out, nil
}
