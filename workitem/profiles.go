package workitem

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// Profile modes: the per-profile capability switch of the migration.
// dark and shadow refuse reserve (profile_disabled); only enabled
// reserves. Queries answer in every mode.
const (
	ModeDark    = "dark"
	ModeShadow  = "shadow"
	ModeEnabled = "enabled"
)

// Profile is one reviewed profile contract, keyed by name and version.
// An empty or zero field is a fail-closed marker: a reservation under
// the profile is refused (profile_incomplete), never defaulted.
type Profile struct {
	Name              string         `json:"name" msgpack:"name"`
	Version           string         `json:"version" msgpack:"version"`
	Weights           Weights        `json:"weights" msgpack:"weights"`
	Max               Dimensions     `json:"max" msgpack:"max"`
	Fairness          FairnessPolicy `json:"fairness" msgpack:"fairness"`
	Disk              DiskPolicy     `json:"disk" msgpack:"disk"`
	TelemetryMaxAgeMs int64          `json:"telemetry_max_age_ms" msgpack:"telemetry_max_age_ms"`
	Mode              string         `json:"mode" msgpack:"mode"`
}

// Weights weigh the dimensions when a reserve picks a host: the host
// with the most free weighted capacity, sum(weight x free), wins.
type Weights struct {
	CPU     int64 `json:"cpu" msgpack:"cpu"`
	Memory  int64 `json:"memory" msgpack:"memory"`
	Disk    int64 `json:"disk" msgpack:"disk"`
	Process int64 `json:"process" msgpack:"process"`
}

// FairnessPolicy bounds a fairness group's debt and how fast it decays.
type FairnessPolicy struct {
	MaxDebt   int64 `json:"max_debt" msgpack:"max_debt"`
	DecayPerS int64 `json:"decay_per_s" msgpack:"decay_per_s"`
}

// DiskPolicy is the free disk a host keeps after a reservation.
type DiskPolicy struct {
	MinFreeMiB int64 `json:"min_free_mib" msgpack:"min_free_mib"`
}

// ProfilesRequest replaces the whole profile set (admins; also what
// --reservation-profiles holds).
type ProfilesRequest struct {
	Profiles []Profile `json:"profiles"`
}

// ProfileStatus is a profile and, if it is incomplete, the fields that
// are empty or zero.
type ProfileStatus struct {
	Profile
	Complete bool     `json:"complete" msgpack:"complete"`
	Missing  []string `json:"missing" msgpack:"missing"`
}

// ProfilesResult is the profile set; Changed says a set command changed
// it (the same set again changes nothing and writes no event). Source
// says where the set came from ("api", "file"; empty for a set made
// before profiles_set version 2 recorded it), FileVersion is the newest
// file_version of --reservation-profiles the cluster ever took, and
// SetIndex the log index of the last change. Kept says that a file's set
// was not taken, because the cluster's wins (see applySetProfiles).
type ProfilesResult struct {
	Profiles    []ProfileStatus `json:"profiles" msgpack:"profiles"`
	Digest      string          `json:"digest" msgpack:"digest"`
	Changed     bool            `json:"changed" msgpack:"changed"`
	Source      string          `json:"source,omitempty" msgpack:"source,omitempty"`
	FileVersion uint64          `json:"file_version,omitempty" msgpack:"file_version,omitempty"`
	SetIndex    uint64          `json:"set_index,omitempty" msgpack:"set_index,omitempty"`
	Kept        bool            `json:"kept,omitempty" msgpack:"kept,omitempty"`
}

// Where a profile set came from (ProfilesResult.Source).
const (
	ProfileSourceAPI  = "api"
	ProfileSourceFile = "file"
)

// profilesCmd is the payload of CmdSetProfiles. Seed marks a set read
// from --reservation-profiles, whose file_version is FileVersion (0: the
// file has none); it travels in command version 2 only.
type profilesCmd struct {
	Profiles    []Profile `msgpack:"profiles"`
	Seed        bool      `msgpack:"seed,omitempty"`
	FileVersion uint64    `msgpack:"file_version,omitempty"`
}

// profilesV2 is the version of workitem_profiles_set from which the
// cluster records where its set came from (profileSource), and a set
// read from a file (a seed, sent as command version 2) is taken only
// when the cluster has no set yet or the file's file_version is above
// every file version it took: an admin's change through the API is
// never undone by a node that restarts with its file.
const profilesV2 = 2

// profileSource is the one row that says where the profile set came
// from.
type profileSource struct {
	ID          string `msgpack:"id"` // profileSourceID
	Source      string `msgpack:"source"`
	FileVersion uint64 `msgpack:"file_version"`
	Index       uint64 `msgpack:"index"`
}

const profileSourceID = "profiles"

func getProfileSource(s fsm.Store) (*profileSource, error) {
	raw, err := s.First(tableProfileSource, "id", profileSourceID)
	if err != nil {
		return nil, internal("read profile source", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*profileSource), nil
}

func (c *profilesCmd) validate() error {
	if len(c.Profiles) > MaxProfiles {
		return fieldErr("profiles", "holds %d profiles, more than %d", len(c.Profiles), MaxProfiles)
	}
	seen := map[[2]string]int{}
	for i, p := range c.Profiles {
		if err := p.validate(fmt.Sprintf("profiles[%d].", i)); err != nil {
			return err
		}
		if j, dup := seen[[2]string{p.Name, p.Version}]; dup {
			return fieldErr(fmt.Sprintf("profiles[%d]", i), "repeats profiles[%d] (%s version %s)", j, p.Name, p.Version)
		}
		seen[[2]string{p.Name, p.Version}] = i
	}
	return nil
}

// validate checks bounds only: empty and zero values are allowed (they
// mark the profile incomplete), negative ones and unknown modes are not.
func (p *Profile) validate(prefix string) error {
	if err := opaque(prefix+"name", p.Name); err != nil {
		return err
	}
	if err := opaque(prefix+"version", p.Version); err != nil {
		return err
	}
	for _, w := range []struct {
		name string
		v    int64
	}{{"cpu", p.Weights.CPU}, {"memory", p.Weights.Memory}, {"disk", p.Weights.Disk}, {"process", p.Weights.Process}} {
		if err := checkRange(prefix+"weights."+w.name, w.v, 0, MaxWeight); err != nil {
			return err
		}
	}
	if err := checkDimensions(prefix+"max", p.Max); err != nil {
		return err
	}
	if err := checkRange(prefix+"fairness.max_debt", p.Fairness.MaxDebt, 0, MaxDebt); err != nil {
		return err
	}
	if err := checkRange(prefix+"fairness.decay_per_s", p.Fairness.DecayPerS, 0, MaxDecayPerS); err != nil {
		return err
	}
	if err := checkRange(prefix+"disk.min_free_mib", p.Disk.MinFreeMiB, 0, extension.MaxDimension); err != nil {
		return err
	}
	if err := checkRange(prefix+"telemetry_max_age_ms", p.TelemetryMaxAgeMs, 0, MaxTelemetryAge.Milliseconds()); err != nil {
		return err
	}
	switch p.Mode {
	case "", ModeDark, ModeShadow, ModeEnabled:
		return nil
	}
	return fieldErr(prefix+"mode", "must be %s, %s or %s, not %q", ModeDark, ModeShadow, ModeEnabled, p.Mode)
}

// missing lists the fields that are empty or zero, in a fixed order.
func (p *Profile) missing() []string {
	var out []string
	check := func(name string, v int64) {
		if v <= 0 {
			out = append(out, name)
		}
	}
	check("weights.cpu", p.Weights.CPU)
	check("weights.memory", p.Weights.Memory)
	check("weights.disk", p.Weights.Disk)
	check("weights.process", p.Weights.Process)
	_ = p.Max.Each(func(name string, v int64) error { check("max."+name, v); return nil })
	check("fairness.max_debt", p.Fairness.MaxDebt)
	check("fairness.decay_per_s", p.Fairness.DecayPerS)
	check("disk.min_free_mib", p.Disk.MinFreeMiB)
	check("telemetry_max_age_ms", p.TelemetryMaxAgeMs)
	if p.Mode == "" {
		out = append(out, "mode")
	}
	return out
}

func statusOf(p Profile) ProfileStatus {
	m := p.missing()
	if m == nil {
		m = []string{}
	}
	return ProfileStatus{Profile: p, Complete: len(m) == 0, Missing: m}
}

func sortProfiles(ps []Profile) {
	slices.SortFunc(ps, func(a, b Profile) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
}

// profilesDigest is "sha256:" + the hex SHA-256 of the sorted set's
// canonical msgpack: equal sets, equal digests.
func profilesDigest(ps []Profile) string {
	sum := sha256.Sum256(log.MustMarshal(ps))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// storedProfiles reads the whole set, sorted (the key order).
func storedProfiles(s fsm.Store) ([]Profile, error) {
	it, err := s.Get(tableProfiles, "id")
	if err != nil {
		return nil, internal("scan profiles", err)
	}
	out := []Profile{}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, *raw.(*Profile))
	}
	return out, nil
}

func getProfile(s fsm.Store, name, version string) (*Profile, error) {
	raw, err := s.First(tableProfiles, "id", name, version)
	if err != nil {
		return nil, internal("read profile", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*Profile), nil
}

func profilesResult(ps []Profile, changed bool, src *profileSource) *ProfilesResult {
	out := &ProfilesResult{Profiles: make([]ProfileStatus, len(ps)), Digest: profilesDigest(ps), Changed: changed}
	for i, p := range ps {
		out.Profiles[i] = statusOf(p)
	}
	if src != nil {
		out.Source, out.FileVersion, out.SetIndex = src.Source, src.FileVersion, src.Index
	}
	return out
}

// applySetProfiles replaces the profile set (admins, or the embedding
// host that read --reservation-profiles). The same set again changes
// nothing. Reservations already made keep what they hold; a profile
// that leaves the set refuses new reserves (profile_disabled). From
// version 2 on (profilesV2) the cluster records where its set came
// from, and a file's set (a seed) is taken only when the cluster has
// none yet (no set was ever recorded and none is stored) or its
// file_version is above the newest the cluster took; otherwise the
// answer is the cluster's set, Kept, and nothing changes.
func applySetProfiles(tx *fsm.Tx, _ *log.Command, c *profilesCmd) (any, error) {
	want := slices.Clone(c.Profiles)
	sortProfiles(want)
	have, err := storedProfiles(tx)
	if err != nil {
		return nil, err
	}
	recorded := tx.EnabledVersion(CmdSetProfiles) >= profilesV2
	var src *profileSource
	if recorded {
		if src, err = getProfileSource(tx); err != nil {
			return nil, err
		}
	}
	if c.Seed {
		var newest uint64 // the newest file version the cluster took
		if src != nil {
			newest = src.FileVersion
		}
		if none := src == nil && len(have) == 0; !none && c.FileVersion <= newest {
			res := profilesResult(have, false, src)
			res.Kept = true
			return res, nil
		}
		return setProfiles(tx, want, have, src, &profileSource{ID: profileSourceID, Source: ProfileSourceFile, FileVersion: c.FileVersion, Index: tx.Index})
	}
	if bytes.Equal(log.MustMarshal(want), log.MustMarshal(have)) {
		return profilesResult(have, false, src), nil
	}
	var next *profileSource
	if recorded {
		next = &profileSource{ID: profileSourceID, Source: ProfileSourceAPI, Index: tx.Index}
		if src != nil {
			next.FileVersion = src.FileVersion
		}
	}
	return setProfiles(tx, want, have, src, next)
}

// setProfiles replaces have with want, records next as the set's source
// (nil: version 1, which recorded none) and writes the event.
func setProfiles(tx *fsm.Tx, want, have []Profile, prev, next *profileSource) (*ProfilesResult, error) {
	changed := !bytes.Equal(log.MustMarshal(want), log.MustMarshal(have))
	if next != nil {
		if err := tx.Insert(tableProfileSource, next); err != nil {
			return nil, internal("store profile source", err)
		}
	}
	if !changed {
		return profilesResult(have, false, next), emitProfiles(tx, have, have, prev, next)
	}
	for i := range have {
		if err := tx.Delete(tableProfiles, &have[i]); err != nil {
			return nil, internal("delete profile", err)
		}
	}
	for i := range want {
		p := want[i]
		if err := tx.Insert(tableProfiles, &p); err != nil {
			return nil, internal("store profile", err)
		}
	}
	return profilesResult(want, true, next), emitProfiles(tx, want, have, prev, next)
}

// emitProfiles writes the profiles_set event: the new set's digest and
// size, the previous digest and, from version 2 on, where the set came
// from.
func emitProfiles(tx *fsm.Tx, want, have []Profile, prev, next *profileSource) error {
	if next == nil {
		return emitJSON(tx, EventProfilesSet, "profiles", "", struct {
			Digest   string `json:"digest"`
			Count    int    `json:"count"`
			Previous string `json:"previous"`
		}{profilesDigest(want), len(want), profilesDigest(have)})
	}
	var prevSource string
	if prev != nil {
		prevSource = prev.Source
	}
	return emitJSON(tx, EventProfilesSet, "profiles", "", struct {
		Digest         string `json:"digest"`
		Count          int    `json:"count"`
		Previous       string `json:"previous"`
		Source         string `json:"source"`
		FileVersion    uint64 `json:"file_version"`
		PreviousSource string `json:"previous_source,omitempty"`
	}{profilesDigest(want), len(want), profilesDigest(have), next.Source, next.FileVersion, prevSource})
}

// runProfiles answers QueryProfiles: the set, with each profile's
// completeness (any principal: profiles hold no tenant's data).
func runProfiles(rt *fsm.ReadTx, _ []byte) (any, error) {
	ps, err := storedProfiles(rt.Txn)
	if err != nil {
		return nil, err
	}
	src, err := getProfileSource(rt.Txn)
	if err != nil {
		return nil, err
	}
	return profilesResult(ps, false, src), nil
}
