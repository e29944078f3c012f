package extension

import (
	"bytes"
	"encoding/json"
)

// The record's fields (see the package doc).
var (
	topRequired = []string{"schema_version", "profile", "dimensions", "concurrency", "exclusivity", "repository",
		"fairness", "host_labels", "anti_affinity", "target_policies", "disk", "fingerprint"}
	topOptional = []string{"branch", "base_ref"}
)

// Parse reads one record (a JSON object) under the closed schema and
// the current identifier rules, and checks its fingerprint under either
// rule of canonical JSON (RFC8785OrLegacy). Failures are invalid errors
// with detail.field (a path inside the record) and detail.reason
// (ReasonInvalid or ReasonFingerprintMismatch); a sensitive value also
// has detail.class (ClassPath, ClassURL, ClassShell or ClassToken).
func Parse(raw []byte) (*Extension, error) {
	return ParseWith(raw, RFC8785OrLegacy, CurrentIdentifiers)
}

// ParseUnder is Parse accepting fingerprints under rules only.
func ParseUnder(raw []byte, rules Rules) (*Extension, error) {
	return ParseWith(raw, rules, CurrentIdentifiers)
}

// ParseWith is Parse under fingerprint rules and identifier rules ids:
// what Apply calls, with the rules of the command versions the cluster
// enables, so that a log replays as it was applied.
func ParseWith(raw []byte, rules Rules, ids Identifiers) (*Extension, error) {
	fields, err := topFields(raw)
	if err != nil {
		return nil, err
	}
	v, ok := fields["schema_version"]
	if !ok {
		return nil, invalid("schema_version", "is missing")
	}
	var version string
	if json.Unmarshal(v, &version) != nil || version != SchemaVersion {
		return nil, invalid("schema_version", "must be %q; an absent, unknown or future version is refused, never read", SchemaVersion)
	}
	// The top level's keys, as parseObject checks them, on the object
	// topFields decoded from the same bytes (decoding it again would give
	// the same map).
	if err := checkObject("", fields, topRequired, topOptional); err != nil {
		return nil, err
	}
	e := &Extension{SchemaVersion: version}
	if err := e.parseFields(fields, ids); err != nil {
		return nil, err
	}
	if e.Exclusivity.Branch && e.Branch == "" {
		return nil, invalid("branch", "exclusivity.branch needs an explicit branch (base_ref never stands for the branch of exclusive work)")
	}
	if !validFingerprint(e.Fingerprint) {
		return nil, invalid("fingerprint", `must be "v1:" and 64 lowercase hex digits`)
	}
	ok, want, err := matchesFingerprint(raw, fields, e.Fingerprint, rules)
	if err != nil {
		return nil, err
	}
	if !ok {
		err := invalid("fingerprint", "is %s; the record's is %s", e.Fingerprint, want)
		err.Detail["reason"] = ReasonFingerprintMismatch
		return nil, err
	}
	return e, nil
}

// topFields decodes the record's top-level object.
func topFields(raw []byte) (object, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, invalid("", "must be a JSON object")
	}
	o, err := decodeObject(raw)
	if err != nil {
		return nil, invalid("", "must be a JSON object: %v", err)
	}
	return o, nil
}

func (e *Extension) parseFields(f object, r Identifiers) error {
	var err error
	sub := func(name string, keys ...string) object {
		if err != nil {
			return nil
		}
		var o object
		o, err = parseObject(name, f[name], keys, nil)
		return o
	}
	p := sub("profile", "name", "version")
	d := sub("dimensions", DimCPU, DimMemory, DimDisk, DimProcesses)
	c := sub("concurrency", "key", "limit")
	x := sub("exclusivity", "repository", "branch")
	fa := sub("fairness", "group", "cost")
	dk := sub("disk", "min_free_mib")
	if err != nil {
		return err
	}
	steps := []func() error{
		func() (err error) { e.Profile.Name, err = str("profile.name", p["name"], r); return },
		func() (err error) { e.Profile.Version, err = str("profile.version", p["version"], r); return },
		func() (err error) {
			e.Dimensions.CPUMillis, err = integer("dimensions."+DimCPU, d[DimCPU], 0, MaxDimension)
			return
		},
		func() (err error) {
			e.Dimensions.MemoryMiB, err = integer("dimensions."+DimMemory, d[DimMemory], 0, MaxDimension)
			return
		},
		func() (err error) {
			e.Dimensions.DiskMiB, err = integer("dimensions."+DimDisk, d[DimDisk], 0, MaxDimension)
			return
		},
		func() (err error) {
			e.Dimensions.Processes, err = integer("dimensions."+DimProcesses, d[DimProcesses], 0, MaxDimension)
			return
		},
		func() (err error) { e.Concurrency.Key, err = str("concurrency.key", c["key"], r); return },
		func() (err error) {
			e.Concurrency.Limit, err = integer("concurrency.limit", c["limit"], 1, MaxLimit)
			return
		},
		func() (err error) {
			e.Exclusivity.Repository, err = boolean("exclusivity.repository", x["repository"])
			return
		},
		func() (err error) { e.Exclusivity.Branch, err = boolean("exclusivity.branch", x["branch"]); return },
		func() (err error) { e.Repository, err = str("repository", f["repository"], r); return },
		func() (err error) {
			if raw, ok := f["branch"]; ok {
				e.Branch, err = str("branch", raw, r)
			}
			return
		},
		func() (err error) {
			if raw, ok := f["base_ref"]; ok {
				e.BaseRef, err = str("base_ref", raw, r)
			}
			return
		},
		func() (err error) { e.Fairness.Group, err = str("fairness.group", fa["group"], r); return },
		func() (err error) { e.Fairness.Cost, err = integer("fairness.cost", fa["cost"], 0, MaxCost); return },
		func() (err error) { e.HostLabels, err = labels("host_labels", f["host_labels"], r); return },
		func() (err error) {
			e.AntiAffinity, err = list("anti_affinity", f["anti_affinity"], MaxAntiAffinity, r)
			return
		},
		func() (err error) {
			e.TargetPolicies, err = list("target_policies", f["target_policies"], MaxTargetPolicies, r)
			return
		},
		func() (err error) {
			e.Disk.MinFreeMiB, err = integer("disk.min_free_mib", dk["min_free_mib"], 0, MaxDimension)
			return
		},
		func() error {
			var s string
			if json.Unmarshal(f["fingerprint"], &s) != nil {
				return invalid("fingerprint", "must be a JSON string")
			}
			e.Fingerprint = s
			return nil
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
