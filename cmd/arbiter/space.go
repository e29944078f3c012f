package main

import (
	"context"
	"encoding/csv"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/client"
	"github.com/spf13/cobra"
)

// `arbiter space`: allocation spaces (/v1/spaces/{slug}) and what is
// decided on a space as a whole: windows of proposals and reservations
// of conflict keys. `arbiter task` (task.go) is the tasks in a space.

func (a *app) spaceCommand() *cobra.Command {
	return group("space", "allocation spaces: put, get, list; their windows, key reservations, occupancy and duplicates",
		`space speaks the allocation routes of a space (/v1/spaces/{slug}):

  space put | get | list         a space: its charter catalog, delivery modes, window
  space window                   decide 1..128 proposals in one command
  space reserve                  reserve a conflict key for a proposal
  space commit | abort | release commit a reservation to its winner, drop a live one, drop a committed one
  space reservations | occupancy | duplicates
                                 a space's live reservations, the keys held now, its duplicate tasks

Every command but list names the space with --space. Answers print as JSON
(-o table for a table). A loser prints the spec's flat conflict body
({"error":"allocation_conflict", "winner": ...}) and exits 3; a request the
cluster finds invalid exits 2.`,
		a.spacePutCommand(), a.spaceGetCommand(), a.spaceListCommand(), a.spaceWindowCommand(),
		a.spaceReserveCommand(), a.spaceCommitCommand(), a.spaceDropCommand("abort"), a.spaceDropCommand("release"),
		a.spacePageCommand("reservations", "a space's live and committed key reservations, by proposal id"),
		a.spacePageCommand("occupancy", "every conflict key held in a space now, and its holder"),
		a.spacePageCommand("duplicates", "tasks that want a key another holds, for a steward to supersede"))
}

// spaceFlag registers the required --space.
func spaceFlag(cmd *cobra.Command) *string {
	s := cmd.Flags().String("space", "", "the space's slug (required)")
	_ = cmd.MarkFlagRequired("space")
	return s
}

func (a *app) spacePutCommand() *cobra.Command {
	cmd, o := a.apiCommand("put --space SLUG --catalog ID=TITLE... [--alias ID=ALIAS]... [flags]",
		"create or replace a space (controller role)",
		`put creates or replaces a space: its charter catalog (one --catalog per work
item, its aliases with --alias), the delivery modes tasks may use, the window
and whether unknown work items make ad hoc slots. Its live tasks are rebound
to the new catalog in the same command; the answer {space, rebound,
duplicates} lists the tasks that then want a key another holds. --filename gives
the whole PUT body instead of the field flags.

  arbiter space put --space multi-agent-research --catalog "T1=Comparative survey" \
      --alias "T1=survey of agents" --delivery-modes result,review --window 2s`, nil)
	slug := spaceFlag(cmd)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (default: the space's, or its slug for a new space)")
	catalog := fs.StringArray("catalog", nil, "a catalog row WORK_ITEM_ID=CANONICAL_TITLE (repeat for more)")
	aliases := fs.StringArray("alias", nil, "an alias of a catalog row, WORK_ITEM_ID=ALIAS (repeat for more)")
	modes := fs.StringSlice("delivery-modes", nil, "delivery_modes (repeat, or a comma list)")
	window := fs.Duration("window", 0, "window_ms as a duration, e.g. 2s")
	adhoc := fs.Bool("adhoc-slots", false, "a work item the catalog does not list makes a slot of its own")
	expected := fs.Uint64("expected-version", 0, "replace only the space at this version (0: create only if absent)")
	markBody(fs, "tenant", "catalog", "alias", "delivery-modes", "window", "adhoc-slots", "expected-version")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.PutSpaceRequest
		if *body != "" {
			if err := a.readBody(fs, *body, &req); err != nil {
				return err
			}
		} else {
			var err error
			if req.Catalog, err = catalogRows(*catalog, *aliases); err != nil {
				return err
			}
			req.TenantRef, req.DeliveryModes, req.AdHocSlots = *tenant, *modes, *adhoc
			req.WindowMs = window.Milliseconds()
			req.ExpectedVersion = optionalUint(fs, "expected-version", *expected)
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().PutSpace(ctx, *slug, req)
		})
	}
	return cmd
}

// catalogRows builds the catalog of --catalog ID=TITLE and --alias
// ID=ALIAS, in the order given.
func catalogRows(rows, aliases []string) ([]client.CatalogRow, error) {
	out := []client.CatalogRow{}
	at := map[string]int{}
	for _, r := range rows {
		id, title, ok := strings.Cut(r, "=")
		if !ok || id == "" || title == "" {
			return nil, usageErrorf("--catalog %q: want WORK_ITEM_ID=CANONICAL_TITLE", r)
		}
		if _, dup := at[id]; dup {
			return nil, usageErrorf("--catalog: %s given twice", id)
		}
		at[id] = len(out)
		out = append(out, client.CatalogRow{WorkItemID: id, CanonicalTitle: title, Aliases: []string{}})
	}
	for _, al := range aliases {
		id, alias, ok := strings.Cut(al, "=")
		i, known := at[id]
		if !ok || alias == "" || !known {
			return nil, usageErrorf("--alias %q: want WORK_ITEM_ID=ALIAS of a --catalog row", al)
		}
		out[i].Aliases = append(out[i].Aliases, alias)
	}
	return out, nil
}

func (a *app) spaceGetCommand() *cobra.Command {
	cmd, o := a.apiCommand("get --space SLUG", "read a space",
		"get prints {space}; another tenant's space is not found (exit 1), as a slug no one put.", nil)
	slug := spaceFlag(cmd)
	stale := staleFlag(cmd.Flags())
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().GetSpace(ctx, *slug, consistencyOf(stale))
		})
	}
	return cmd
}

func (a *app) spaceListCommand() *cobra.Command {
	cmd, o := a.apiCommand("list [--after CURSOR] [--limit N]", "the spaces of your tenants, by slug, a page at a time",
		"list prints one page {spaces, next_cursor}; --after takes the next_cursor.", nil)
	p := addPageFlags(cmd.Flags(), true)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().ListSpaces(ctx, p.query())
		})
	}
	return cmd
}

// spacePageCommand is space reservations, occupancy or duplicates.
func (a *app) spacePageCommand(name, short string) *cobra.Command {
	cmd, o := a.apiCommand(name+" --space SLUG [--after CURSOR] [--limit N]", short,
		name+" prints one page {"+name+", next_cursor}; --after takes the next_cursor.", nil)
	slug := spaceFlag(cmd)
	p := addPageFlags(cmd.Flags(), true)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			al := c.Allocation()
			switch name {
			case "reservations":
				return al.ListReservations(ctx, *slug, p.query())
			case "occupancy":
				return al.Occupancy(ctx, *slug, p.query())
			}
			return al.Duplicates(ctx, *slug, p.query())
		})
	}
	return cmd
}

func (a *app) spaceWindowCommand() *cobra.Command {
	cmd, o := a.apiCommand("window --space SLUG --proposal FIELD=VALUE,... [--proposal ...] [--idempotency-key K]",
		"decide 1..128 proposals in one command",
		`window decides its proposals in one command, by (received_seq, payload
digest), each against the state the ones before it left; the answer lists each
proposal's outcome {proposal_id, status: 201|409|422, body} in processing order.
The command exits 0 whatever each proposal's outcome.

Each --proposal is a comma-separated list of FIELD=VALUE, quoted as CSV when a
value holds a comma: proposal_id, title, delivery_mode (required), work_item_id,
received_seq, idempotency_key. --idempotency-key is the window's own key: a
retry with it answers the original results (without one the command makes one,
printed on an unknown outcome). --filename gives the whole body instead.

  arbiter space window --space mar --proposal proposal_id=p1,title=Survey,delivery_mode=result \
      --proposal 'proposal_id=p2,"title=Survey, again",delivery_mode=result,received_seq=2'`, nil)
	slug := spaceFlag(cmd)
	fs := cmd.Flags()
	specs := fs.StringArray("proposal", nil, "a proposal: proposal_id=ID,title=TITLE,delivery_mode=MODE[,work_item_id=W][,received_seq=N][,idempotency_key=K] (repeat, 1..128)")
	markBody(fs, "proposal")
	key := keyFlag(fs, "idempotency-key", "the window's Idempotency-Key: a retry with it answers the original results (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.WindowRequest
		if *body != "" {
			if err := a.readBody(fs, *body, &req); err != nil {
				return err
			}
		} else {
			if len(*specs) == 0 {
				return usageErrorf("give at least one --proposal (or --filename)")
			}
			for _, s := range *specs {
				p, err := proposalOf(s)
				if err != nil {
					return err
				}
				req.Proposals = append(req.Proposals, p)
			}
		}
		k := key.get()
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().Window(ctx, *slug, req, k)
		}))
	}
	return cmd
}

// proposalOf parses one --proposal: FIELD=VALUE pairs, read as a CSV
// record so that a quoted value may hold a comma.
func proposalOf(spec string) (client.Proposal, error) {
	var p client.Proposal
	r := csv.NewReader(strings.NewReader(spec))
	r.LazyQuotes = false
	pairs, err := r.Read()
	if err != nil {
		return p, usageErrorf("--proposal %q: %v", spec, err)
	}
	seen := map[string]bool{}
	for _, pair := range pairs {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || seen[k] {
			return p, usageErrorf("--proposal %q: want FIELD=VALUE pairs, each field once", spec)
		}
		seen[k] = true
		switch k {
		case "proposal_id":
			p.ProposalID = v
		case "title":
			p.Title = v
		case "delivery_mode":
			p.DeliveryMode = v
		case "work_item_id":
			p.WorkItemID = &v
		case "received_seq":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return p, usageErrorf("--proposal %q: received_seq %q is not a number", spec, v)
			}
			p.ReceivedSeq = &n
		case "idempotency_key":
			p.IdempotencyKey = v
		default:
			return p, usageErrorf("--proposal %q: unknown field %q (proposal_id, title, delivery_mode, work_item_id, received_seq, idempotency_key)", spec, k)
		}
	}
	if p.ProposalID == "" || p.Title == "" || p.DeliveryMode == "" {
		return p, usageErrorf("--proposal %q: proposal_id, title and delivery_mode are required", spec)
	}
	return p, nil
}

func (a *app) spaceReserveCommand() *cobra.Command {
	cmd, o := a.apiCommand("reserve --space SLUG --title T --delivery-mode M [--work-item W] [--proposal-id P]",
		"reserve a conflict key for a proposal, until it commits, aborts or expires",
		`reserve holds the conflict key the title (or --work-item) binds to for a
proposal (201 {reservation}); commit gives it to its winner, abort drops it.
Held by another: the flat conflict body and exit 3. --proposal-id names the
reservation (default: a new id, printed on an unknown outcome); the same
proposal again answers its reservation.`, nil)
	slug := spaceFlag(cmd)
	fs := cmd.Flags()
	title := fs.String("title", "", "the title (required)")
	mode := fs.String("delivery-mode", "", "the delivery mode (required)")
	workItem := fs.String("work-item", "", "work_item_id: the catalog slot, instead of binding the title")
	_ = cmd.MarkFlagRequired("title")
	_ = cmd.MarkFlagRequired("delivery-mode")
	markBody(fs, "title", "delivery-mode", "work-item")
	key := keyFlag(fs, "proposal-id", "proposal_id, the reservation's id and key (default: a new one)")
	cmd.RunE = func(*cobra.Command, []string) error {
		req := client.KeyReserveRequest{ProposalID: key.get(), Title: *title, DeliveryMode: *mode,
			WorkItemID: optionalString(fs, "work-item", *workItem)}
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().Reserve(ctx, *slug, req)
		}))
	}
	return cmd
}

func (a *app) spaceCommitCommand() *cobra.Command {
	cmd, o := a.apiCommand("commit --space SLUG --proposal-id P --winner-type TYPE --winner-id ID",
		"commit a reservation to its winner",
		`commit turns a live reservation into the key's occupancy by its winner
(the object the host made elsewhere: --winner-type pull_request --winner-id 91)
and prints the occupancy {conflict_key, winner, proposal_id}.`, nil)
	slug := spaceFlag(cmd)
	fs := cmd.Flags()
	proposal := fs.String("proposal-id", "", "the reservation's proposal_id (required)")
	wtype := fs.String("winner-type", "", "the type of the object the host made elsewhere, e.g. pull_request (required)")
	wid := fs.String("winner-id", "", "the winner's id: a number, or a string id (required)")
	_ = cmd.MarkFlagRequired("proposal-id")
	_ = cmd.MarkFlagRequired("winner-type")
	_ = cmd.MarkFlagRequired("winner-id")
	cmd.RunE = func(*cobra.Command, []string) error {
		w := client.Winner{Type: *wtype, ID: client.WinnerID{Str: *wid}}
		if n, err := strconv.ParseUint(*wid, 10, 64); err == nil {
			w.ID = client.WinnerID{Num: n}
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Allocation().Commit(ctx, *slug, *proposal, client.CommitRequest{Winner: &w})
		})
	}
	return cmd
}

// spaceDropCommand is space abort (a live reservation) or release (a
// committed one).
func (a *app) spaceDropCommand(name string) *cobra.Command {
	what := map[string]string{"abort": "drop a live reservation", "release": "drop a committed reservation: the key is free again"}[name]
	cmd, o := a.apiCommand(name+" --space SLUG --proposal-id P", what,
		name+" prints {proposal_id, conflict_key, dropped}; sending it again is safe.", nil)
	slug := spaceFlag(cmd)
	proposal := cmd.Flags().String("proposal-id", "", "the reservation's proposal_id (required)")
	_ = cmd.MarkFlagRequired("proposal-id")
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			if name == "abort" {
				return c.Allocation().Abort(ctx, *slug, *proposal)
			}
			return c.Allocation().Release(ctx, *slug, *proposal)
		})
	}
	return cmd
}
