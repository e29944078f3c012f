package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/internal/rawremote"
)

// benchCatalogRows is the size of the catalog of the space taskOp puts:
// a create binds its title against every row (docs/domains/allocation.md), as
// a real space's does; no row shares a word with a bench title, so each
// create keys on its title.
const benchCatalogRows = 16

// taskOp creates an allocation task per call, each with a title of its
// own (so each takes a new conflict key) in delivery mode result, in a
// space the setup puts for the run.
func taskOp(e benchEnv) (loadgen.Op, string, error) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", e.prefix, e.run)
	slug := fmt.Sprintf("arbiter-bench-%x", h.Sum64()) // a slug is lowercase, whatever the prefix
	catalog := make([]allocation.CatalogRow, benchCatalogRows)
	for i := range catalog {
		catalog[i] = allocation.CatalogRow{WorkItemID: fmt.Sprintf("T%d", i+1), CanonicalTitle: fmt.Sprintf("nightly catalog entry %c", 'a'+i), Aliases: []string{}}
	}
	r := e.remotes[0]
	if _, err := setupCall(func(ctx context.Context) (*allocation.SpaceResult, error) {
		return allocation.NewService(r, r).PutSpace(ctx, slug, allocation.PutSpaceRequest{Catalog: catalog, DeliveryModes: []string{"result"}})
	}); err != nil {
		return nil, "", fmt.Errorf("putting space %s: %w", slug, err)
	}
	services := perClient(e.remotes, func(r *rawremote.Remote) *allocation.Service { return allocation.NewService(r, r) })
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := services[c].CreateTask(ctx, slug, allocation.CreateTaskRequest{
			Title: fmt.Sprintf("bench task %d %d", c, seq), DeliveryMode: "result"})
		if err == nil && (res.Replayed || res.Task.Status != allocation.StatusOpen || res.Task.Space != slug) {
			err = fmt.Errorf("create answered task %d %s, not a new open task", res.Task.ID, res.Task.Status)
		}
		return err
	}, "space " + slug, nil
}
