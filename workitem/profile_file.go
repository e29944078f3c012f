package workitem

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// LoadProfileFile reads a profile set: a JSON object {"profiles": [...]}
// as PUT /v1/workitems/profiles takes it, decoded strictly (an unknown
// field is an error) and checked for bounds. Empty and zero fields are
// kept: they mark a profile incomplete, so reserves under it are
// refused, never defaulted.
func LoadProfileFile(path string) (*ProfilesRequest, error) {
	var req ProfilesRequest
	if err := strictjson.DecodeFile(path, &req); err != nil {
		return nil, err
	}
	if req.Profiles == nil {
		req.Profiles = []Profile{}
	}
	cmd := profilesCmd(req)
	if err := cmd.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &req, nil
}

// profileLoader is the domain's --reservation-profiles: Load reads the
// file (at start, and on SIGHUP), Start proposes what it read once a
// leader exists and again after each reload, as the node itself.
type profileLoader struct {
	file   string
	mu     sync.Mutex
	want   *ProfilesRequest
	reload chan struct{}
}

func newProfileLoader() *profileLoader { return &profileLoader{reload: make(chan struct{}, 1)} }

func (l *profileLoader) flags(fs *flag.FlagSet) {
	fs.StringVar(&l.file, "reservation-profiles", "", `JSON file {"profiles": [{"name", "version", "weights", "max", "fairness", "disk", "telemetry_max_age_ms", "mode"}]} replicated as the reservation profile set once a leader exists (reloaded on SIGHUP; give every node the same file)`)
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

// propose sets the profiles, retrying while the cluster cannot take
// them yet (no leader, the command not enabled), until ctx ends.
func (l *profileLoader) propose(ctx context.Context, svc *Service, h domain.Host, req ProfilesRequest) {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		res, err := svc.SetProfiles(ctx, req)
		if err == nil {
			if res.Changed {
				h.Logger().Info("reservation profiles replicated", "profiles", len(res.Profiles), "digest", res.Digest)
			}
			return
		}
		if !errors.Is(err, errs.Unavailable) {
			h.Logger().Error("reservation profiles refused", "error", err)
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
