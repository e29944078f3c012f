package access

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/retry"
)

// Guard is one node's access control: its bootstrap file, the registry
// the cluster's table makes (as of what the node applied), and the node
// it keeps informed. Each node has its own (two nodes in one process do
// not share one). Which registry is in force: the table's once the
// cluster holds one, else the file's; at a restart, the copy of the table
// the node last applied (SetCacheFile) until the node replays the
// cluster's table.
type Guard struct {
	mu       sync.Mutex
	path     string             // the file's path, for logs ("" from Go)
	file     *identity.File     // nil: no file (open mode, or an embedder's own registry)
	fileReg  *identity.Registry // the file's registry
	table    *tableState        // nil: the cluster holds no table (as of what this node applied)
	setter   Setter             // the node, once started
	logger   *slog.Logger
	inForce  string        // "file" or "table": what the node was last given, to log a switch
	reload   chan struct{} // one pending reload is enough: the seed loop reads the latest file
	openMode bool          // the node refused a registry: it runs in open mode
	// cachePath is the copy of the table this node last installed ("":
	// none kept); floor is the FSM applied index of the copy read at
	// start, while the node replays below it (0 once it reached it).
	cachePath string
	floor     uint64
}

// Setter is what a Guard keeps informed: a node that authenticates
// callers with a registry (cluster.Node.SetPrincipals).
type Setter interface {
	SetPrincipals(*identity.Registry) error
}

// tableState is what the table makes: its registry and, for logs, where
// it came from.
type tableState struct {
	registry    *identity.Registry
	source      string
	fileVersion uint64
	index       uint64
	digest      string
	count       int
	list        []identity.PrincipalConfig // hashes only: what the copy keeps
	copied      bool                       // read from the copy at start, not applied since
}

// NewGuard returns a guard with no file.
func NewGuard() *Guard { return &Guard{reload: make(chan struct{}, 1)} }

// LoadFile reads a principals file (identity.LoadFile) as the node's
// bootstrap source, and returns its registry: what the node
// authenticates with until the cluster holds a table. Called again (on
// SIGHUP), it proposes the file again; an error keeps the previous one.
func (g *Guard) LoadFile(path string) (*identity.Registry, error) {
	f, reg, err := identity.LoadFile(path)
	if err != nil {
		return nil, err
	}
	g.setFile(path, f, reg)
	return reg, nil
}

// SetFile is LoadFile of a file's content given from Go.
func (g *Guard) SetFile(f identity.File) (*identity.Registry, error) {
	reg, err := identity.NewRegistry(f.Principals)
	if err != nil {
		return nil, err
	}
	if f.FileVersion > identity.MaxFileVersion {
		return nil, fmt.Errorf("identity: file_version %d is above %d", f.FileVersion, uint64(identity.MaxFileVersion))
	}
	g.setFile("", &f, reg)
	return reg, nil
}

func (g *Guard) setFile(path string, f *identity.File, reg *identity.Registry) {
	g.mu.Lock()
	g.path, g.file, g.fileReg = path, f, reg
	g.pushLocked()
	g.mu.Unlock()
	select {
	case g.reload <- struct{}{}:
	default:
	}
}

// SetCacheFile makes the guard keep a copy of the table it last
// installed at path (arbiter serve: <data-dir>/access-table.json):
// hashes only, written atomically (mode 0600) after each table the node
// applies, removed when the cluster's table is gone. Called before the
// node starts: if a copy is at path, it is in force (it wins over the
// file, logged at INFO) until the node has replayed up to the applied
// index the copy was written at; a table from an older applied state (a
// snapshot the restart loads) does not replace it. A node that restarts
// without a leader, and so cannot replay, never accepts a token the
// cluster revoked before it stopped. A copy that cannot be read is an
// error: remove it to start with the file.
func (g *Guard) SetCacheFile(path string) error {
	st, applied, err := readCopy(path)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cachePath = path
	if st != nil {
		g.table, g.floor = st, applied
		g.pushLocked()
	}
	return nil
}

// Registry is the registry in force: the one a node starts with
// (cluster.Config.Principals), the copy's if SetCacheFile found one, else
// the file's; nil without either.
func (g *Guard) Registry() *identity.Registry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.table != nil {
		return g.table.registry
	}
	return g.fileReg
}

// InForce says which registry the node authenticates with: "table" (the
// cluster's, as of index), "copy" (the table this node last applied,
// read from its copy at start, as of index, until it replays the
// cluster's) or "file" (its own; "" without one).
func (g *Guard) InForce() (source string, index uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.table != nil && g.table.copied:
		return "copy", g.table.index
	case g.table != nil:
		return "table", g.table.index
	case g.fileReg != nil:
		return "file", 0
	}
	return "", 0
}

// setTable is the effect of a change (and of a restore): st is the
// table's state, nil for none, as of the FSM applied index applied.
// While the node replays below the copy read at start, the copy stays in
// force: an older state's table is not newer than what the node last
// applied. From there on, the copy follows (or is removed with) the
// table.
func (g *Guard) setTable(st *tableState, applied uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if applied < g.floor {
		return nil
	}
	g.floor = 0
	g.table = st
	g.pushLocked()
	if g.cachePath == "" {
		return nil
	}
	if err := writeCopy(g.cachePath, st, applied); err != nil {
		// A stale copy would put an older table in force at the next
		// start; without one, the file is (as without a copy at all).
		rmErr := os.Remove(g.cachePath)
		if rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			return fmt.Errorf("principals: write the table copy %s: %w (and remove the stale one: %v)", g.cachePath, err, rmErr)
		}
		return fmt.Errorf("principals: write the table copy %s: %w (the stale one is removed)", g.cachePath, err)
	}
	return nil
}

// pushLocked gives the node the registry in force, and logs a switch
// between the file and the table.
func (g *Guard) pushLocked() {
	if g.setter == nil {
		return
	}
	reg, now := g.fileReg, "file"
	if g.table != nil {
		reg, now = g.table.registry, "table"
	}
	if reg == nil || g.openMode {
		return
	}
	if err := g.setter.SetPrincipals(reg); err != nil {
		// A node started in open mode keeps it: the table is kept but
		// not enforced.
		g.openMode = true
		g.logf(slog.LevelWarn, "principals: the node runs in open mode; the cluster's principal table is not enforced here", "error", err)
		return
	}
	if now == "table" && g.table.copied {
		now = "copy"
	}
	if now != g.inForce || now == "table" {
		switch now {
		case "copy":
			g.logf(slog.LevelInfo, fmt.Sprintf("principals: the table this node last applied (index %d) is in force until it replays the cluster's, not the file", g.floor),
				"copy", g.cachePath, "source", g.table.source, "file_version", g.table.fileVersion, "index", g.floor, "table_index", g.table.index,
				"principals", g.table.count, "digest", g.table.digest, "file", g.path)
		case "table":
			g.logf(slog.LevelInfo, "principals: the cluster's table is in force, not the file", "source", g.table.source,
				"file_version", g.table.fileVersion, "index", g.table.index, "principals", g.table.count, "digest", g.table.digest, "file", g.path)
		default:
			g.logf(slog.LevelInfo, "principals: this node's file is in force (this node has applied no principal table: the cluster holds none yet, or the node has not replayed it)", "file", g.path, "principals", g.fileReg.Len())
		}
	}
	g.inForce = now
}

func (g *Guard) logf(level slog.Level, msg string, args ...any) {
	if g.logger != nil {
		g.logger.Log(context.Background(), level, msg, args...)
	}
}

// Domain is the guard as a domain: the module (whose changes reach the
// guard), the /v1/principals routes (admins) and Start, which attaches
// the node and seeds the table from the file.
func (g *Guard) Domain() domain.Domain {
	return domain.Domain{Name: Name, Module: func() fsm.Module { return module(g) }, Routes: routes, Start: g.start}
}

// start attaches the node (a Setter) and proposes the file as a seed
// once a leader exists and the cluster enables it, and again after each
// reload, until ctx ends.
func (g *Guard) start(ctx context.Context, h domain.Host) {
	g.mu.Lock()
	g.logger = h.Logger()
	if s, ok := h.(Setter); ok {
		g.setter = s
		g.pushLocked()
	}
	g.mu.Unlock()
	svc := NewService(h, h)
	for {
		g.mu.Lock()
		f, path := g.file, g.path
		g.mu.Unlock()
		if f != nil {
			g.seed(ctx, svc, path, f)
		}
		select {
		case <-ctx.Done():
			return
		case <-g.reload:
		}
	}
}

// seed proposes f, retrying while the cluster cannot take it yet (no
// leader, the module not enabled), and logs which set won: INFO when the
// file's is the table, WARN when the table is kept and differs from the
// file.
func (g *Guard) seed(ctx context.Context, svc *Service, path string, f *identity.File) {
	var res *SeedResult
	err := retry.Unavailable(ctx, func(ctx context.Context) (err error) {
		res, err = svc.Seed(ctx, f)
		return err
	})
	digest := Digest(f.Principals)
	switch {
	case err == nil && res.Applied:
		g.logf(slog.LevelInfo, "principals: this file seeded the cluster's table", "file", path, "file_version", f.FileVersion,
			"principals", res.Count, "digest", res.Digest, "index", res.Index)
	case err == nil && res.Digest != digest:
		g.logf(slog.LevelWarn, "principals: this node's file differs from the cluster's table, which is in force; give the file a file_version above the table's to replace it",
			"file", path, "file_version", f.FileVersion, "file_digest", digest, "table_source", res.Source,
			"table_file_version", res.FileVersion, "table_index", res.Index, "table_digest", res.Digest, "table_principals", res.Count)
	case err == nil:
		g.logf(slog.LevelInfo, "principals: the cluster's table is kept; it holds what this node's file holds", "file", path,
			"file_version", f.FileVersion, "table_file_version", res.FileVersion, "digest", res.Digest)
	case ctx.Err() == nil:
		g.logf(slog.LevelError, "principals: seeding the cluster's table from the file was refused", "file", path, "error", err)
	}
}

// routes are /v1/principals, for admins (the module asks admin of every
// tenant for a change).
func routes(h domain.Host) []domain.Route {
	s := NewService(h, h)
	return []domain.Route{
		domain.Endpoint[consistencyQuery, ListResult]{Method: http.MethodGet, Path: "/v1/principals", Access: domain.Admin,
			Call: func(ctx context.Context, q consistencyQuery) (*ListResult, error) { return s.List(ctx, q.Consistency) }}.Route(),
		domain.Endpoint[PutRequest, ChangeResult]{Method: http.MethodPost, Path: "/v1/principals", Access: domain.Admin,
			Call: s.Put, Status: func(r *ChangeResult) int {
				if r.Created {
					return http.StatusCreated
				}
				return http.StatusOK
			}, Statuses: []int{http.StatusCreated, http.StatusOK}}.Route(),
		domain.Endpoint[idPath, ChangeResult]{Method: http.MethodDelete, Path: "/v1/principals/{id}", Access: domain.Admin,
			Call: func(ctx context.Context, p idPath) (*ChangeResult, error) { return s.Remove(ctx, p.ID) }}.Route(),
		domain.Endpoint[rotateParams, ChangeResult]{Method: http.MethodPost, Path: "/v1/principals/{id}/rotate", Access: domain.Admin,
			Call: func(ctx context.Context, p rotateParams) (*ChangeResult, error) {
				return s.Rotate(ctx, RotateRequest{ID: p.ID, TokenSHA256: p.Body.TokenSHA256})
			}}.Route(),
	}
}

type (
	consistencyQuery struct {
		Consistency fsm.Consistency `query:"consistency"`
	}
	idPath struct {
		ID string `path:"id"`
	}
	rotateParams struct {
		ID   string        `path:"id"`
		Body RotateRequest `body:""`
	}
)

// Domain is a fresh guard's domain, without a file: the table is kept
// and enforced on a node with authentication, and nothing seeds it.
func Domain() domain.Domain { return NewGuard().Domain() }
