package projection

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// Name is the domain's name.
const Name = "projection"

// Option configures the projection domain of one node from Go, for a host
// program that does not take flags.
type Option func(*projectionDomain)

// WithRuntimeRoot makes the node write publications under dir
// (<dir>/hook-projections/<target_id>/current.json). dir must exist; a
// node without a root writes no files. Give every node its own root.
func WithRuntimeRoot(dir string) Option { return func(d *projectionDomain) { d.root = dir } }

// WithLeaseTTL makes the node propose lease_ttl_ms = ms once it has
// started and a leader exists, as --projection-config does. There is no
// default: without this, the flag or PUT /v1/projection/config, acquire
// fails.
func WithLeaseTTL(ms int64) Option {
	return func(d *projectionDomain) { d.wantTTL = ms }
}

// WithObserver calls fn with everything the node's writer does (leases
// granted, files written, skipped or failed), one at a time: in log order
// on the FSM's goroutine, and for the retry of a failed write (another
// event of the same publication) on the node's retry goroutine. fn must
// be quick and must not call back into the node.
func WithObserver(fn func(Event)) Option { return func(d *projectionDomain) { d.observe = fn } }

// Domain is fenced single-writer publication as a domain: the module,
// the /v1/projection routes, the --projection-root and
// --projection-config flags. The `arbiter projection` command is the
// binary's (cmd/arbiter), over package client.
func Domain(opts ...Option) domain.Domain {
	d := &projectionDomain{reload: make(chan struct{}, 1)}
	for _, o := range opts {
		o(d)
	}
	return domain.Domain{
		Name:   Name,
		Module: d.module,
		Routes: d.routes,
		Flags:  d.flags,
		Load:   d.load,
		Start:  d.start,
	}
}

type projectionDomain struct {
	root       string
	configFile string
	observe    func(Event)

	mu sync.Mutex
	// w is the node's one writer, made on its first use (writer), never
	// by module: Module() is a description, which a host may call
	// before the flags that name the root are parsed.
	w       *writer
	wantTTL int64         // the lease_ttl_ms to propose (0: none)
	reload  chan struct{} // a new wantTTL to propose
}

// module describes the node's module; its commands reach the node's
// writer through d.writer.
func (d *projectionDomain) module() fsm.Module { return module(d.writer) }

// writer is the node's one writer, made on first use: by the first
// command or restored hook that has work for it (on the FSM's goroutine)
// or publish route, after the flags were parsed and Load checked the
// root. Making it touches no file and changes no state and no result, so
// it may happen inside Apply.
func (d *projectionDomain) writer() *writer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w == nil {
		d.w = newWriter(d.root, d.observe)
	}
	return d.w
}

func (d *projectionDomain) flags(fs *flag.FlagSet) {
	fs.StringVar(&d.root, "projection-root", d.root, "runtime root under which this node writes hook-projections/<target_id>/current.json (an existing directory, one per node; none: no files)")
	fs.StringVar(&d.configFile, "projection-config", "", `JSON file {"lease_ttl_ms": N} proposed once a leader exists (reloaded on SIGHUP); there is no default`)
}

// load checks the root (it must exist at start: a typo is an error, not
// a node that silently writes nothing; one that disappears later fails
// each write closed) and reads the config file.
func (d *projectionDomain) load() error {
	if d.root != "" {
		abs, err := filepath.Abs(d.root)
		if err != nil {
			return fmt.Errorf("--projection-root: %w", err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return fmt.Errorf("--projection-root %s is not an existing directory", abs)
		}
		d.mu.Lock()
		if d.w == nil { // the root a writer writes under does not move
			d.root = abs
		}
		d.mu.Unlock()
	}
	if d.configFile == "" {
		return nil
	}
	req, err := LoadConfigFile(d.configFile)
	if err != nil {
		return fmt.Errorf("--projection-config: %w", err)
	}
	d.mu.Lock()
	d.wantTTL = req.LeaseTTLMs
	d.mu.Unlock()
	select {
	case d.reload <- struct{}{}:
	default:
	}
	return nil
}

// start proposes the configured lease_ttl_ms once a leader exists, and
// again after each reload.
func (d *projectionDomain) start(ctx context.Context, h domain.Host) {
	svc := NewService(h, h)
	for {
		d.mu.Lock()
		ttl := d.wantTTL
		d.mu.Unlock()
		if ttl != 0 {
			proposeConfig(ctx, svc, h, ttl)
		}
		select {
		case <-ctx.Done():
			return
		case <-d.reload:
		}
	}
}

// proposeConfig sets lease_ttl_ms, retrying while the cluster cannot
// take it yet (no leader, domain not enabled), until ctx ends.
func proposeConfig(ctx context.Context, svc *Service, h domain.Host, ttl int64) {
	for wait := configRetry; ; wait = min(2*wait, maxConfigRetry) {
		res, err := svc.SetConfig(ctx, ConfigRequest{LeaseTTLMs: ttl})
		if err == nil {
			if res.Changed {
				h.Logger().Info("projection lease_ttl_ms configured", "lease_ttl_ms", ttl)
			}
			return
		}
		if !errors.Is(err, errUnavailable) {
			h.Logger().Error("projection configuration refused", "lease_ttl_ms", ttl, "error", err)
			return
		}
		if sleep(ctx, wait) != nil {
			return
		}
	}
}

func (d *projectionDomain) routes(h domain.Host) []domain.Route {
	s := NewService(h, h)
	// A publish served here refuses when this node's root is gone.
	s.rootError = func() error { return d.writer().rootError() }
	return []domain.Route{
		domain.Endpoint[ConfigRequest, Config]{Method: http.MethodPut, Path: "/v1/projection/config", Access: domain.Admin,
			Call: s.SetConfig, Errors: domain.ResultInDetail}.Route(),
		domain.Endpoint[consistencyQuery, Config]{Method: http.MethodGet, Path: "/v1/projection/config", Access: domain.Authenticated,
			Call: func(ctx context.Context, q consistencyQuery) (*Config, error) { return s.Config(ctx, q.Consistency) }}.Route(),
		domain.Endpoint[TargetRequest, TargetResult]{Method: http.MethodPost, Path: "/v1/projection/targets", Access: domain.Authenticated,
			Call: s.RegisterTarget, Status: func(r *TargetResult) int {
				if r.Created {
					return http.StatusCreated
				}
				return http.StatusOK
			}, Statuses: []int{http.StatusCreated, http.StatusOK}, Errors: domain.ResultInDetail}.Route(),
		domain.Endpoint[targetPath, TargetView]{Method: http.MethodGet, Path: "/v1/projection/targets/{target_id}", Access: domain.Authenticated,
			Call: func(ctx context.Context, q targetPath) (*TargetView, error) {
				return s.Target(ctx, q.TargetID, q.Consistency)
			}}.Route(),
		domain.Endpoint[targetPath, json.RawMessage]{Method: http.MethodGet, Path: "/v1/projection/targets/{target_id}/current", Access: domain.Authenticated,
			Call: func(ctx context.Context, q targetPath) (*json.RawMessage, error) {
				b, err := s.Current(ctx, q.TargetID, q.Consistency)
				return &b, err
			}}.Route(),
		domain.Post("/v1/projection/channels/submit", domain.Authenticated, s.Submit),
		domain.Post("/v1/projection/leases/acquire", domain.Authenticated, s.Acquire),
		domain.Post("/v1/projection/publish", domain.Authenticated, s.Publish),
		domain.Post("/v1/projection/leases/release", domain.Authenticated, s.Release),
	}
}

// The path and query parameters of the GET routes.
type (
	consistencyQuery struct {
		Consistency fsm.Consistency `query:"consistency"`
	}
	targetPath struct {
		TargetID    string          `path:"target_id"`
		Consistency fsm.Consistency `query:"consistency"`
	}
)

// How proposeConfig backs off while the cluster cannot take the
// configuration yet.
const (
	configRetry    = 200 * time.Millisecond
	maxConfigRetry = 5 * time.Second
)

var errUnavailable = errs.Unavailable

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
