package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `arbiter capacity`: capacity leases (/v1/capacity).

func (a *app) capacityCommand() *cobra.Command {
	return group("capacity", "capacity leases: set cells, acquire, renew, release, reclaim, status, reconcile",
		`capacity speaks the capacity lease routes (/v1/capacity):

  capacity cells               set a cell's capacity per resource class (controller)
  capacity acquire             lease amounts on one or more cells, all or nothing
  capacity renew | release     renew or release leases you hold
  capacity reclaim             end expired leases, a page at a time
  capacity status | reconcile  cells and leases of a tenant, a page at a time

The request's schema_version is filled in (by package client), and its owner_digest is the
caller's (GET /v1/auth/whoami). In open mode every caller is trusted and names
the owner: --owner NAME (hashed as a principal called NAME would be) or
--owner-digest. --graph names the tenant's graph (default "default"). --filename
FILE|-|JSON gives the whole request instead of the field flags. Answers print
as JSON (-o table for a table). A denial (exhausted capacity, a stale fence,
an expired lease) exits 3, and with -o json prints the error body, its
detail.result explaining it.

  arbiter capacity cells   --tenant acme --cell gpu-1 --capacity gpu=8
  arbiter capacity acquire --tenant acme --work-item w-1 --demand gpu-1:gpu:2 --ttl 60s
  arbiter capacity renew   --tenant acme --lease LEASE_ID:EPOCH:FENCE --ttl 60s
  arbiter capacity release --tenant acme --lease LEASE_ID:EPOCH:FENCE
  arbiter capacity status  --tenant acme [--cell gpu-1]`,
		a.capacityCellsCommand(), a.capacityAcquireCommand(), a.capacityLeasesCommand("renew", "renew leases you hold (every lease checked before any changes)"),
		a.capacityLeasesCommand("release", "release leases you hold"), a.capacityReclaimCommand(),
		a.capacityReadCommand("status", "cells and leases of a tenant, a page at a time"),
		a.capacityReadCommand("reconcile", "the tenant's cells and leases as the cluster holds them, a page at a time"))
}

// tenantGraphFlags registers --tenant and --graph, body fields.
func tenantGraphFlags(fs *pflag.FlagSet) (tenant, graph *string) {
	tenant = fs.String("tenant", "", "tenant_ref (required)")
	graph = fs.String("graph", "", "graph_ref (default: the default graph, \""+capacity.DefaultGraph+"\")")
	markBody(fs, "tenant", "graph")
	return tenant, graph
}

// ownerFlags are --owner-digest and --owner: the owner digest a request
// carries, or the caller's own.
type ownerFlags struct{ digest, name *string }

func addOwnerFlags(fs *pflag.FlagSet) ownerFlags {
	o := ownerFlags{
		digest: fs.String("owner-digest", "", "owner_digest (default: the caller's, from whoami)"),
		name:   fs.String("owner", "", "the owner as a principal name: owner_digest is that principal's (for open mode, where the caller names the owner)"),
	}
	markBody(fs, "owner-digest", "owner")
	return o
}

// check refuses both flags at once.
func (o ownerFlags) check() error {
	if *o.digest != "" && *o.name != "" {
		return usageErrorf("--owner and --owner-digest are exclusive")
	}
	return nil
}

// resolve is the owner digest: --owner-digest, the digest of a principal
// named --owner, or the caller's own (whoami). A trusted caller (open
// mode) has none: a usage error, it must name the owner.
func (o ownerFlags) resolve(ctx context.Context, c *client.Client) (string, error) {
	switch {
	case *o.digest != "":
		return *o.digest, nil
	case *o.name != "":
		return capacity.OwnerDigest(*o.name), nil
	}
	who, err := c.Cluster().Whoami(ctx)
	if err != nil {
		return "", err
	}
	if who.OwnerDigest == "" {
		return "", usageErrorf("the cluster trusts this caller (open mode), so it names the owner: --owner NAME or --owner-digest DIGEST")
	}
	return who.OwnerDigest, nil
}

func (a *app) capacityCellsCommand() *cobra.Command {
	cmd, o := a.apiCommand("cells --tenant T --cell ID --capacity CLASS=N... [--expected-epoch E]",
		"set a cell's capacity per resource class (controller role)",
		`cells sets a cell's capacity per resource class (never below its use) and prints
{decision, cell}. --expected-epoch guards against a concurrent change (another
epoch exits 3). --filename gives the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	tenant, graph := tenantGraphFlags(fs)
	cell := fs.String("cell", "", "cell_id (required)")
	caps := fs.StringArray("capacity", nil, "CLASS=AMOUNT, one per resource class (repeat; a class left out has capacity 0)")
	epoch := fs.Uint64("expected-epoch", 0, "refuse unless the cell is at this epoch")
	markBody(fs, "cell", "capacity", "expected-epoch")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.UpdateCellRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "cell"); err != nil {
				return err
			}
			req = client.UpdateCellRequest{TenantRef: *tenant, GraphRef: *graph, Cell: client.CellSpec{CellID: *cell, Capacities: map[string]uint64{}},
				ExpectedEpoch: optionalUint(fs, "expected-epoch", *epoch)}
			for _, p := range *caps {
				class, n, ok := strings.Cut(p, "=")
				amount, err := strconv.ParseUint(n, 10, 64)
				if !ok || class == "" || err != nil {
					return usageErrorf("--capacity %q: want CLASS=AMOUNT", p)
				}
				req.Cell.Capacities[class] = amount
			}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Capacity().UpdateCell(ctx, req)
		})
	}
	return cmd
}

func (a *app) capacityAcquireCommand() *cobra.Command {
	cmd, o := a.apiCommand("acquire --tenant T --work-item W --demand CELL:CLASS:AMOUNT... [--ttl D] [--idempotency-key K]",
		"lease amounts on one or more cells, all or nothing",
		`acquire leases every demand (16 at most) or none, and prints {decision, leases}:
keep each lease's LEASE_ID:LEASE_EPOCH:FENCE_TOKEN for renew and release.
--idempotency-key makes a retry replay the grant; without one the command makes
a key and, if the outcome is unknown, prints "retry with: --idempotency-key K"
on stderr. --filename gives the whole body instead of the field flags (its
idempotency_key is used unless --idempotency-key is given).`, nil)
	fs := cmd.Flags()
	tenant, graph := tenantGraphFlags(fs)
	workItem := fs.String("work-item", "", "work_item_id the leases are for (required)")
	demands := fs.StringArray("demand", nil, "CELL:CLASS:AMOUNT[:EXPECTED_EPOCH] (repeat for more, 16 at most)")
	ttl := fs.Duration("ttl", time.Minute, "lease lifetime (24h at most)")
	priority := fs.Int64("priority", 0, "priority")
	leaseID := fs.String("lease-id", "", "name of the lease (a single demand only; default: the cluster names it)")
	cost := fs.Int64("cost-budget-micros", 0, "cost budget (absent: none)")
	tokens := fs.Int64("token-budget", 0, "token budget (absent: none)")
	markBody(fs, "work-item", "demand", "ttl", "priority", "lease-id", "cost-budget-micros", "token-budget")
	own := addOwnerFlags(fs)
	key := keyFlag(fs, "idempotency-key", "the acquire's idempotency key: a retry with it replays the grant (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.AcquireRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "work-item", "demand"); err != nil {
				return err
			}
			if err := own.check(); err != nil {
				return err
			}
			req = client.AcquireRequest{TenantRef: *tenant, GraphRef: *graph, WorkItemID: *workItem, Priority: *priority, LeaseID: *leaseID, TTLMs: ttl.Milliseconds()}
			for _, d := range *demands {
				dm, err := demandOf(d)
				if err != nil {
					return err
				}
				req.Demands = append(req.Demands, dm)
			}
			if fs.Changed("cost-budget-micros") {
				req.CostBudgetMicros = cost
			}
			if fs.Changed("token-budget") {
				req.TokenBudget = tokens
			}
			return nil
		}); err != nil {
			return err
		}
		keyOver(key, &req.IdempotencyKey)
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			if *body == "" {
				var err error
				if req.OwnerDigest, err = own.resolve(ctx, c); err != nil {
					return nil, err
				}
			}
			return c.Capacity().Acquire(ctx, req)
		}))
	}
	return cmd
}

// demandOf reads CELL:CLASS:AMOUNT[:EXPECTED_EPOCH].
func demandOf(d string) (client.Demand, error) {
	parts := strings.Split(d, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return client.Demand{}, usageErrorf("--demand %q: want CELL:CLASS:AMOUNT[:EXPECTED_EPOCH]", d)
	}
	amount, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return client.Demand{}, usageErrorf("--demand %q: amount: %v", d, err)
	}
	dm := client.Demand{CellID: parts[0], ResourceClass: parts[1], Amount: amount}
	if len(parts) == 4 {
		e, err := strconv.ParseUint(parts[3], 10, 64)
		if err != nil {
			return client.Demand{}, usageErrorf("--demand %q: expected epoch: %v", d, err)
		}
		dm.ExpectedEpoch = &e
	}
	return dm, nil
}

func (a *app) capacityLeasesCommand(name, short string) *cobra.Command {
	cmd, o := a.apiCommand(name+" --tenant T --lease ID:EPOCH:FENCE... [--idempotency-key K]", short,
		name+` presents the leases (16 at most; every one checked before any changes) and
prints {decision, leases}; renew advances each lease's epoch: present the new
references next. --idempotency-key makes a retry replay the result; without one
the command makes a key and prints it on an unknown outcome. --filename gives the
whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	tenant, graph := tenantGraphFlags(fs)
	leases := fs.StringArray("lease", nil, "LEASE_ID:LEASE_EPOCH:FENCE_TOKEN of a lease you hold (repeat for more, 16 at most)")
	markBody(fs, "lease")
	var ttl *time.Duration
	if name == "renew" {
		ttl = fs.Duration("ttl", 0, "renewal lifetime (default: each lease's own)")
		markBody(fs, "ttl")
	}
	own := addOwnerFlags(fs)
	key := keyFlag(fs, "idempotency-key", "the call's idempotency key: a retry with it replays the result (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.LeasesRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "lease"); err != nil {
				return err
			}
			if err := own.check(); err != nil {
				return err
			}
			req = client.LeasesRequest{TenantRef: *tenant, GraphRef: *graph}
			if ttl != nil {
				req.TTLMs = ttl.Milliseconds()
			}
			for _, l := range *leases {
				ref, err := parseLeaseRef(l)
				if err != nil {
					return err
				}
				req.Leases = append(req.Leases, ref)
			}
			return nil
		}); err != nil {
			return err
		}
		keyOver(key, &req.IdempotencyKey)
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			if *body == "" {
				var err error
				if req.OwnerDigest, err = own.resolve(ctx, c); err != nil {
					return nil, err
				}
			}
			if name == "renew" {
				return c.Capacity().Renew(ctx, req)
			}
			return c.Capacity().Release(ctx, req)
		}))
	}
	return cmd
}

// parseLeaseRef reads LEASE_ID:EPOCH:FENCE; the id may hold colons.
func parseLeaseRef(s string) (client.LeaseRef, error) {
	fence := strings.LastIndexByte(s, ':')
	epoch := -1
	if fence > 0 {
		epoch = strings.LastIndexByte(s[:fence], ':')
	}
	if epoch <= 0 {
		return client.LeaseRef{}, usageErrorf("--lease %q: want LEASE_ID:LEASE_EPOCH:FENCE_TOKEN", s)
	}
	e, err1 := strconv.ParseUint(s[epoch+1:fence], 10, 64)
	f, err2 := strconv.ParseUint(s[fence+1:], 10, 64)
	if err1 != nil || err2 != nil {
		return client.LeaseRef{}, usageErrorf("--lease %q: epoch and fence are integers", s)
	}
	return client.LeaseRef{LeaseID: s[:epoch], LeaseEpoch: e, Fence: f}, nil
}

func (a *app) capacityReclaimCommand() *cobra.Command {
	cmd, o := a.apiCommand("reclaim --tenant T [--cell C] [--max N] [--cursor C]",
		"expire leases whose time has passed, a page at a time",
		`reclaim ends up to --max expired leases and prints {reclaimed_lease_ids,
next_cursor}; go on with --cursor. A repeat is safe. --filename gives the whole body
instead of the field flags.`, nil)
	fs := cmd.Flags()
	tenant, graph := tenantGraphFlags(fs)
	cell := fs.String("cell", "", "only this cell")
	maxCount := fs.Int64("max", capacity.MaxRowsPerPage, "most leases to reclaim, 1..128")
	cursor := fs.String("cursor", "", "next_cursor of the call before")
	markBody(fs, "cell", "max", "cursor")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.CapacityReclaimRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant"); err != nil {
				return err
			}
			req = client.CapacityReclaimRequest{TenantRef: *tenant, GraphRef: *graph, CellID: *cell, MaxCount: *maxCount, Cursor: *cursor}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Capacity().Reclaim(ctx, req)
		})
	}
	return cmd
}

func (a *app) capacityReadCommand(name, short string) *cobra.Command {
	cmd, o := a.apiCommand(name+" --tenant T [--cell C] [--lease L] [--max N] [--cursor C]", short,
		name+` prints one page {cells, leases, next_cursor}; go on with --cursor. --filename
gives the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	tenant, graph := tenantGraphFlags(fs)
	cell := fs.String("cell", "", "only this cell")
	lease := fs.String("lease", "", "only this lease (its id)")
	maxCount := fs.Int64("max", capacity.MaxRowsPerPage, "page size, 1..128")
	cursor := fs.String("cursor", "", "next_cursor of the page before")
	markBody(fs, "cell", "lease", "max", "cursor")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.CapacityReadRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant"); err != nil {
				return err
			}
			req = client.CapacityReadRequest{TenantRef: *tenant, GraphRef: *graph, CellID: *cell, LeaseID: *lease, MaxCount: *maxCount, Cursor: *cursor}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			if name == "status" {
				return c.Capacity().Status(ctx, req)
			}
			return c.Capacity().Reconcile(ctx, req)
		})
	}
	return cmd
}
