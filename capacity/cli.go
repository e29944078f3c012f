package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The `arbiter capacity` commands take typed flags and build the request
// DTO themselves: schema_version is filled in, and the owner digest is
// the caller's own (asked of GET /v1/auth/whoami), so nobody has to read
// the source to compute it. --json sends a whole DTO as it is instead.

func cli() *domain.CLI {
	return &domain.CLI{Name: "capacity", Summary: "acquire, renew, release and inspect capacity leases", Command: command}
}

const cliLong = `capacity speaks the capacity lease routes (POST /v1/capacity/<command>) with
typed flags; the request's schema_version is filled in and its owner_digest is
the caller's (GET /v1/auth/whoami). In open mode every caller is trusted and
names the owner: --owner NAME (hashed as a principal called NAME would be) or
--owner-digest. Each command also takes --json BODY (or --json - to read
standard input): the whole request DTO, sent as it is. The answer is printed
as JSON (-o table for a table); a denial prints the error, with the result
that explains it in error.detail.result, and exits 1. --graph names the graph
of the tenant (graph_ref) every command works in; without it, the default
graph ("default").

  arbiter capacity cells   --tenant acme --cell gpu-1 --capacity gpu=8
  arbiter capacity acquire --tenant acme --work-item w-1 --demand gpu-1:gpu:2 --ttl 60s --idempotency-key k1
  arbiter capacity renew   --tenant acme --lease LEASE_ID:EPOCH:FENCE --ttl 60s
  arbiter capacity release --tenant acme --lease LEASE_ID:EPOCH:FENCE
  arbiter capacity status  --tenant acme [--cell gpu-1]
  arbiter capacity acquire --tenant acme --graph g2 --work-item w-2 --demand gpu-1:gpu:1 --idempotency-key k2`

func command(env domain.CLIEnv) *cobra.Command {
	c := &cobra.Command{Use: "capacity", Long: cliLong, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	c.AddCommand(cellsCommand(env), acquireCommand(env), leasesCommand(env, "renew", "renew leases you hold (every lease checked before any changes)"),
		leasesCommand(env, "release", "release leases you hold"), reclaimCommand(env),
		readCommand(env, "status", "cells and leases of a tenant, a page at a time"),
		readCommand(env, "reconcile", "the leases that disagree with their cells, a page at a time"))
	return c
}

// cliCall is what every capacity command shares: the raw --json body, the
// tenant and the graph.
type cliCall struct {
	env    domain.CLIEnv
	body   *string
	tenant *string
	graph  *string
}

func newCall(env domain.CLIEnv, fs *pflag.FlagSet) *cliCall {
	return &cliCall{env: env,
		body:   fs.String("json", "", "the whole request DTO as JSON, sent as it is (- reads standard input); the other flags are then not taken"),
		tenant: fs.String("tenant", "", "tenant_ref"),
		graph:  fs.String("graph", "", "graph_ref (default: the default graph, \""+DefaultGraph+"\")"),
	}
}

// send posts req (or the --json body) to the command's route and prints
// the answer, or the error's body.
func (c *cliCall) send(cmd *cobra.Command, route string, build func(context.Context, domain.Conn) (any, error)) error {
	conn, err := c.env.Dial()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req any
	if *c.body != "" {
		if n := changedBesides(cmd, "json"); n != "" {
			return fmt.Errorf("--json sends the request as it is: leave out --%s", n)
		}
		raw := []byte(*c.body)
		if *c.body == "-" {
			if raw, err = io.ReadAll(io.LimitReader(c.env.Stdin, domain.MaxBodyBytes+1)); err != nil {
				return err
			}
		}
		if !json.Valid(raw) {
			return errors.New("--json: the request is not JSON")
		}
		req = json.RawMessage(raw)
	} else {
		if *c.tenant == "" {
			return errors.New("--tenant is required (or --json)")
		}
		if req, err = build(ctx, conn); err != nil {
			return err
		}
	}
	var out json.RawMessage
	callErr := conn.CallJSON(ctx, "POST", "/v1/capacity/"+route, req, &out)
	var answer any = out
	if callErr != nil {
		answer = map[string]*errs.Error{"error": errs.From(callErr)}
	}
	if err := c.env.Print(answer); err != nil {
		return err
	}
	return callErr
}

// changedBesides names a flag given on the command line other than the
// ones listed and those every command takes.
func changedBesides(cmd *cobra.Command, keep ...string) string {
	found := ""
	cmd.LocalNonPersistentFlags().Visit(func(f *pflag.Flag) {
		for _, k := range keep {
			if f.Name == k {
				return
			}
		}
		found = f.Name
	})
	return found
}

// owner is the owner digest the request carries: --owner-digest, the
// digest of a principal named --owner, or the caller's own.
type owner struct{ digest, name *string }

func ownerFlags(fs *pflag.FlagSet) owner {
	return owner{
		digest: fs.String("owner-digest", "", "owner_digest (default: the caller's, from whoami)"),
		name:   fs.String("owner", "", "the owner as a principal name: owner_digest is that principal's (for open mode, where the caller names the owner)"),
	}
}

func (o owner) resolve(ctx context.Context, conn domain.Conn) (string, error) {
	switch {
	case *o.digest != "" && *o.name != "":
		return "", errors.New("--owner and --owner-digest are exclusive")
	case *o.digest != "":
		return *o.digest, nil
	case *o.name != "":
		return OwnerDigest(*o.name), nil
	}
	var who struct {
		OwnerDigest string `json:"owner_digest"`
		Trusted     bool   `json:"trusted"`
	}
	if err := conn.CallJSON(ctx, "GET", "/v1/auth/whoami", nil, &who); err != nil {
		return "", fmt.Errorf("asking whoami for the owner digest: %w", err)
	}
	if who.OwnerDigest == "" {
		return "", errors.New("the cluster trusts this caller (open mode), so it names the owner: --owner NAME or --owner-digest DIGEST")
	}
	return who.OwnerDigest, nil
}

func cellsCommand(env domain.CLIEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "cells --tenant T --cell ID --capacity CLASS=N...", Short: "set a cell's capacity per resource class (controller role)", Args: cobra.NoArgs}
	c := newCall(env, cmd.Flags())
	cell := cmd.Flags().String("cell", "", "cell_id")
	caps := cmd.Flags().StringArray("capacity", nil, "CLASS=AMOUNT, one per resource class (a class left out has capacity 0)")
	epoch := cmd.Flags().Uint64("expected-epoch", 0, "refuse unless the cell is at this epoch")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.send(cmd, "cells", func(context.Context, domain.Conn) (any, error) {
			req := UpdateCellRequest{SchemaVersion: SchemaVersion, TenantRef: *c.tenant, GraphRef: *c.graph, Cell: CellSpec{CellID: *cell, Capacities: map[string]uint64{}}}
			for _, p := range *caps {
				class, n, ok := strings.Cut(p, "=")
				amount, err := strconv.ParseUint(n, 10, 64)
				if !ok || class == "" || err != nil {
					return nil, fmt.Errorf("--capacity %q: want CLASS=AMOUNT", p)
				}
				req.Cell.Capacities[class] = amount
			}
			if cmd.Flags().Changed("expected-epoch") {
				req.ExpectedEpoch = epoch
			}
			return req, nil
		})
	}
	return cmd
}

func acquireCommand(env domain.CLIEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "acquire --tenant T --work-item W --demand CELL:CLASS:AMOUNT... --ttl D", Short: "lease amounts on one or more cells, all or nothing", Args: cobra.NoArgs}
	c := newCall(env, cmd.Flags())
	fs := cmd.Flags()
	workItem := fs.String("work-item", "", "work_item_id the leases are for")
	demands := fs.StringArray("demand", nil, "CELL:CLASS:AMOUNT[:EXPECTED_EPOCH] (repeat for more cells, 16 at most)")
	ttl := fs.Duration("ttl", time.Minute, "lease lifetime (24h at most)")
	key := fs.String("idempotency-key", "", "required: a retry with the same key replays the grant")
	priority := fs.Int32("priority", 0, "priority")
	leaseID := fs.String("lease-id", "", "name of the lease (a single demand only; default: the cluster names it)")
	cost := fs.Int64("cost-budget-micros", 0, "cost budget (0: none)")
	tokens := fs.Int64("token-budget", 0, "token budget (0: none)")
	own := ownerFlags(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.send(cmd, "acquire", func(ctx context.Context, conn domain.Conn) (any, error) {
			if *key == "" {
				return nil, errors.New("--idempotency-key is required: retry an acquire whose outcome you did not learn with the same key, and it replays the grant")
			}
			req := AcquireRequest{SchemaVersion: SchemaVersion, TenantRef: *c.tenant, GraphRef: *c.graph, WorkItemID: *workItem, IdempotencyKey: *key,
				Priority: *priority, LeaseID: *leaseID, TTLMs: ttl.Milliseconds()}
			for _, d := range *demands {
				parts := strings.Split(d, ":")
				if len(parts) < 3 || len(parts) > 4 {
					return nil, fmt.Errorf("--demand %q: want CELL:CLASS:AMOUNT[:EXPECTED_EPOCH]", d)
				}
				amount, err := strconv.ParseUint(parts[2], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("--demand %q: amount: %v", d, err)
				}
				dm := Demand{CellID: parts[0], ResourceClass: parts[1], Amount: amount}
				if len(parts) == 4 {
					e, err := strconv.ParseUint(parts[3], 10, 64)
					if err != nil {
						return nil, fmt.Errorf("--demand %q: expected epoch: %v", d, err)
					}
					dm.ExpectedEpoch = &e
				}
				req.Demands = append(req.Demands, dm)
			}
			if cmd.Flags().Changed("cost-budget-micros") {
				req.CostBudgetMicros = cost
			}
			if cmd.Flags().Changed("token-budget") {
				req.TokenBudget = tokens
			}
			var err error
			req.OwnerDigest, err = own.resolve(ctx, conn)
			return req, err
		})
	}
	return cmd
}

func leasesCommand(env domain.CLIEnv, name, short string) *cobra.Command {
	cmd := &cobra.Command{Use: name + " --tenant T --lease ID:EPOCH:FENCE...", Short: short, Args: cobra.NoArgs}
	c := newCall(env, cmd.Flags())
	fs := cmd.Flags()
	leases := fs.StringArray("lease", nil, "LEASE_ID:LEASE_EPOCH:FENCE_TOKEN of a lease you hold (repeat for more, 16 at most)")
	ttl := fs.Duration("ttl", 0, "renewal lifetime (renew; default: each lease's own)")
	key := fs.String("idempotency-key", "", "a retry with the same key replays the result")
	own := ownerFlags(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.send(cmd, name, func(ctx context.Context, conn domain.Conn) (any, error) {
			req := LeasesRequest{SchemaVersion: SchemaVersion, TenantRef: *c.tenant, GraphRef: *c.graph, IdempotencyKey: *key, TTLMs: ttl.Milliseconds()}
			for _, l := range *leases {
				ref, err := parseLeaseRef(l)
				if err != nil {
					return nil, err
				}
				req.Leases = append(req.Leases, ref)
			}
			var err error
			req.OwnerDigest, err = own.resolve(ctx, conn)
			return req, err
		})
	}
	return cmd
}

// parseLeaseRef reads LEASE_ID:EPOCH:FENCE; the id may hold colons.
func parseLeaseRef(s string) (LeaseRef, error) {
	fence := strings.LastIndexByte(s, ':')
	epoch := -1
	if fence > 0 {
		epoch = strings.LastIndexByte(s[:fence], ':')
	}
	if epoch <= 0 {
		return LeaseRef{}, fmt.Errorf("--lease %q: want LEASE_ID:LEASE_EPOCH:FENCE_TOKEN", s)
	}
	e, err1 := strconv.ParseUint(s[epoch+1:fence], 10, 64)
	f, err2 := strconv.ParseUint(s[fence+1:], 10, 64)
	if err1 != nil || err2 != nil {
		return LeaseRef{}, fmt.Errorf("--lease %q: epoch and fence are integers", s)
	}
	return LeaseRef{LeaseID: s[:epoch], LeaseEpoch: e, FenceToken: f}, nil
}

func reclaimCommand(env domain.CLIEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "reclaim --tenant T", Short: "expire leases whose time has passed, a page at a time", Args: cobra.NoArgs}
	c := newCall(env, cmd.Flags())
	cell := cmd.Flags().String("cell", "", "only this cell")
	maxCount := cmd.Flags().Int("max", MaxRowsPerPage, "most leases to reclaim")
	cursor := cmd.Flags().String("cursor", "", "next_cursor of the call before")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.send(cmd, "reclaim", func(context.Context, domain.Conn) (any, error) {
			return ReclaimRequest{SchemaVersion: SchemaVersion, TenantRef: *c.tenant, GraphRef: *c.graph, CellID: *cell, MaxCount: *maxCount, Cursor: *cursor}, nil
		})
	}
	return cmd
}

func readCommand(env domain.CLIEnv, name, short string) *cobra.Command {
	cmd := &cobra.Command{Use: name + " --tenant T", Short: short, Args: cobra.NoArgs}
	c := newCall(env, cmd.Flags())
	cell := cmd.Flags().String("cell", "", "only this cell")
	lease := cmd.Flags().String("lease", "", "only this lease")
	maxCount := cmd.Flags().Int("max", MaxRowsPerPage, "page size")
	cursor := cmd.Flags().String("cursor", "", "next_cursor of the page before")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.send(cmd, name, func(context.Context, domain.Conn) (any, error) {
			return ReadRequest{SchemaVersion: SchemaVersion, TenantRef: *c.tenant, GraphRef: *c.graph, CellID: *cell, LeaseID: *lease, MaxCount: *maxCount, Cursor: *cursor}, nil
		})
	}
	return cmd
}
