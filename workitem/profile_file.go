package workitem

import (
	"context"
	"flag"
	"fmt"
	"sync"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/internal/strictjson"
	"github.com/arbiterhq/arbiter/retry"
)

// ProfileFile is what --reservation-profiles holds: the PUT body's
// profiles and an optional file_version (1 and up; absent or 0: none).
// The file seeds the cluster's set only when the cluster has none yet,
// or when its file_version is above every file version the cluster
// took: raise it to replace a set an admin changed through the API.
type ProfileFile struct {
	FileVersion uint64    `json:"file_version,omitempty"`
	Profiles    []Profile `json:"profiles"`
}

// LoadProfileFile reads a profile file (ProfileFile), decoded strictly
// (an unknown field is an error) and checked for bounds. Empty and zero
// fields are kept: they mark a profile incomplete, so reserves under it
// are refused, never defaulted.
func LoadProfileFile(path string) (*ProfileFile, error) {
	var f ProfileFile
	if err := strictjson.DecodeFile(path, &f); err != nil {
		return nil, err
	}
	if f.Profiles == nil {
		f.Profiles = []Profile{}
	}
	cmd := profilesCmd{Profiles: f.Profiles}
	if err := cmd.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// profileLoader is the domain's --reservation-profiles: Load reads the
// file (at start, and on SIGHUP), Start proposes what it read as a seed
// (seedProfiles) once a leader exists and the cluster enables it, and
// again after each reload, as the node itself, and logs which set won.
type profileLoader struct {
	file   string
	mu     sync.Mutex
	want   *ProfileFile
	reload chan struct{}
}

func newProfileLoader() *profileLoader { return &profileLoader{reload: make(chan struct{}, 1)} }

func (l *profileLoader) flags(fs *flag.FlagSet) {
	fs.StringVar(&l.file, "reservation-profiles", "", `JSON file {"file_version"?, "profiles": [{"name", "version", "weights", "max", "fairness", "disk", "telemetry_max_age_ms", "mode"}]} that seeds the reservation profile set once a leader exists, only if the cluster has none yet or file_version is above every one it took: a change through PUT /v1/workitems/profiles is never undone by a restart (reloaded on SIGHUP; give every node the same file)`)
}

func (l *profileLoader) load() error {
	if l.file == "" {
		return nil
	}
	req, err := LoadProfileFile(l.file)
	if err != nil {
		return fmt.Errorf("--reservation-profiles: %w", err)
	}
	l.mu.Lock()
	l.want = req
	l.mu.Unlock()
	select {
	case l.reload <- struct{}{}:
	default:
	}
	return nil
}

func (l *profileLoader) start(ctx context.Context, h domain.Host) {
	svc := NewService(h, h)
	// The first round proposes what Load read at start; its signal would
	// propose it twice.
	select {
	case <-l.reload:
	default:
	}
	for {
		l.mu.Lock()
		want := l.want
		l.mu.Unlock()
		if want != nil {
			l.propose(ctx, svc, h, *want)
		}
		select {
		case <-ctx.Done():
			return
		case <-l.reload:
		}
	}
}

// propose seeds the profiles, retrying while the cluster cannot take
// them yet (no leader, the command not enabled), until ctx ends, and
// logs whether the file's set or the cluster's won.
func (l *profileLoader) propose(ctx context.Context, svc *Service, h domain.Host, f ProfileFile) {
	var res *ProfilesResult
	err := retry.Unavailable(ctx, func(ctx context.Context) (err error) {
		res, err = svc.seedProfiles(ctx, f)
		return err
	})
	switch {
	case err == nil && res.Kept:
		h.Logger().Info("reservation profiles: the cluster's set is kept, not this file's; give the file a file_version above the cluster's to replace it",
			"file", l.file, "file_version", f.FileVersion, "cluster_source", res.Source, "cluster_file_version", res.FileVersion,
			"cluster_set_index", res.SetIndex, "cluster_digest", res.Digest)
	case err == nil:
		h.Logger().Info("reservation profiles: this file's set is the cluster's", "file", l.file, "file_version", f.FileVersion,
			"profiles", len(res.Profiles), "digest", res.Digest, "changed", res.Changed)
	case ctx.Err() == nil:
		h.Logger().Error("reservation profiles refused", "file", l.file, "error", err)
	}
}
