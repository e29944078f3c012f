package main

import (
	"context"

	"github.com/arbiterhq/arbiter/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The host resource reservation commands of `arbiter workitem` (host,
// hosts, telemetry, reserve, release, reclaim, query, profiles): the
// shared hosts a claimed work item reserves (workitem-resource-reservation.txt).

func (a *app) workitemHostCommand() *cobra.Command {
	cmd, o := a.apiCommand("host --host ID --cpu-millis N --memory-mib N --disk-mib N --processes N [--label K=V]... [--expected-epoch E]",
		"add or change a shared host (controller of every tenant)",
		`host adds or changes a shared host and prints {host, created}. --expected-epoch
guards a change against a concurrent one (another epoch exits 3). The same
request again is safe. --filename gives the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	host := fs.String("host", "", "host_id (required)")
	labels := fs.StringToString("label", nil, "host labels, KEY=VALUE (repeat, or a comma list)")
	dims := addDimensionFlags(fs)
	epoch := fs.Uint64("expected-epoch", 0, "change it only at this epoch")
	markBody(fs, "host", "label", "expected-epoch")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.PutHostRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "host"); err != nil {
				return err
			}
			req = client.PutHostRequest{HostID: *host, Labels: *labels, Capacity: *dims, ExpectedEpoch: optionalUint(fs, "expected-epoch", *epoch)}
			if req.Labels == nil {
				req.Labels = map[string]string{}
			}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().PutHost(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemHostsCommand() *cobra.Command {
	cmd, o := a.apiCommand("hosts --tenant T [--after CURSOR] [--limit N] [--stale]",
		"the shared hosts, a page at a time",
		`hosts prints one page {hosts, next_cursor, now_ms} of the shared hosts in host_id
order, each with its labels, capacity, use, what is free and the age of its
telemetry (-1: never reported); --after takes the next_cursor. Hosts are every
tenant's: any reader of the tenant named reads them all. -o table prints one
row a host, labels and dimensions in dotted columns.`, nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	_ = cmd.MarkFlagRequired("tenant")
	p := addPageFlags(fs, true)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().Hosts(ctx, client.HostQuery{TenantRef: *tenant, PageQuery: p.query()})
		})
	}
	return cmd
}

// addDimensionFlags registers the four capacity dimensions.
func addDimensionFlags(fs *pflag.FlagSet) *client.Dimensions {
	d := &client.Dimensions{}
	fs.Int64Var(&d.CPUMillis, "cpu-millis", 0, "capacity: CPU in thousandths of a core")
	fs.Int64Var(&d.MemoryMiB, "memory-mib", 0, "capacity: memory in MiB")
	fs.Int64Var(&d.DiskMiB, "disk-mib", 0, "capacity: disk in MiB")
	fs.Int64Var(&d.Processes, "processes", 0, "capacity: processes")
	markBody(fs, "cpu-millis", "memory-mib", "disk-mib", "processes")
	return d
}

func (a *app) workitemTelemetryCommand() *cobra.Command {
	cmd, o := a.apiCommand("telemetry --host ID --report-seq N --disk-free-mib N",
		"report a host's free disk",
		`telemetry records a host's free disk and prints {host}. --report-seq must rise
(else exit 3, stale_report), which makes a repeat safe. --filename gives the whole
body instead of the field flags.`, nil)
	fs := cmd.Flags()
	host := fs.String("host", "", "host_id (required)")
	seq := fs.Uint64("report-seq", 0, "the report's sequence number, rising (required)")
	free := fs.Int64("disk-free-mib", 0, "free disk in MiB (required)")
	markBody(fs, "host", "report-seq", "disk-free-mib")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.TelemetryRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "host", "report-seq", "disk-free-mib"); err != nil {
				return err
			}
			req = client.TelemetryRequest{HostID: *host, ReportSeq: *seq, DiskFreeMiB: *free}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().Telemetry(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemReserveCommand() *cobra.Command {
	cmd, o := a.apiCommand("reserve --tenant T --id ID --attempt N --fence F [--host H]",
		"reserve a host for a claim, as its reservation record asks",
		`reserve reserves the host named, or the eligible host with the most free
weighted capacity, for the claimed item, and prints {reservation}. The same
claim again answers its reservation, unchanged. A refusal exits 3 with
detail.reason (capacity, no_eligible_host, branch_exclusive, ...). --filename gives
the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	cl := addClaimFlags(fs)
	host := fs.String("host", "", "host_id (default: the eligible host with the most free capacity)")
	markBody(fs, "host")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.HostReserveRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "id", "attempt", "fence"); err != nil {
				return err
			}
			req = client.HostReserveRequest{TenantRef: *cl.tenant, WorkItemID: *cl.id, Attempt: *cl.attempt, Fence: *cl.fence, HostID: *host}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().Reserve(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemReleaseCommand() *cobra.Command {
	cmd, o := a.apiCommand("release --tenant T --id ID --attempt N --fence F --reservation R",
		"end a host reservation before its claim ends",
		`release ends the reservation and prints {reservation}; an ended one answers
unchanged. --filename gives the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	cl := addClaimFlags(fs)
	res := fs.String("reservation", "", "reservation_id (required)")
	markBody(fs, "reservation")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.HostReleaseRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "id", "attempt", "fence", "reservation"); err != nil {
				return err
			}
			req = client.HostReleaseRequest{TenantRef: *cl.tenant, WorkItemID: *cl.id, Attempt: *cl.attempt, Fence: *cl.fence, ReservationID: *res}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().Release(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemReclaimCommand() *cobra.Command {
	cmd, o := a.apiCommand("reclaim [--tenant T] [--host H] [--max N] [--cursor C]",
		"end reservations whose claim expired, a page at a time",
		`reclaim ends reservations whose claim expired (at most 8 x --max examined) and
prints {reclaimed_reservation_ids, next_cursor}; go on with --cursor. --filename
gives the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "only this tenant's reservations")
	host := fs.String("host", "", "only this host's reservations")
	maxCount := fs.Int64("max", 128, "most reservations to end, 1..128")
	cursor := fs.String("cursor", "", "next_cursor of the call before")
	markBody(fs, "tenant", "host", "max", "cursor")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.HostReclaimRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			req = client.HostReclaimRequest{TenantRef: *tenant, HostID: *host, MaxCount: *maxCount, Cursor: *cursor}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().Reclaim(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemQueryCommand() *cobra.Command {
	cmd, o := a.apiCommand("query --tenant T [--id ID] [--host H] [--max N] [--cursor C]",
		"reservations, hosts and fairness debts, a page at a time",
		`query prints one page {reservations, hosts, fairness, next_cursor}: the tenant's
reservations (of one item or one host), the hosts (or the one named, with use,
free capacity and telemetry age) and the tenant's fairness debts, --max rows
across the three; go on with --cursor (workitem hosts lists the hosts alone).
--filename gives the whole body instead of the flags.`, nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	id := fs.String("id", "", "only this work item's reservations")
	host := fs.String("host", "", "only this host (and its reservations)")
	maxCount := fs.Int64("max", 128, "rows a page, 1..128")
	cursor := fs.String("cursor", "", "next_cursor of the page before")
	markBody(fs, "tenant", "id", "host", "max", "cursor")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.ReservationQueryRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant"); err != nil {
				return err
			}
			req = client.ReservationQueryRequest{TenantRef: *tenant, WorkItemID: *id, HostID: *host, MaxCount: *maxCount, Cursor: *cursor}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().Query(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemProfilesCommand() *cobra.Command {
	cmd, o := a.apiCommand("profiles [--stale]", "read the reservation profile set",
		"profiles prints {profiles, digest, source, ...}: each profile, complete or what it misses.", nil)
	stale := staleFlag(cmd.Flags())
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().Profiles(ctx, consistencyOf(stale))
		})
	}
	return cmd
}

func (a *app) workitemSetProfilesCommand() *cobra.Command {
	cmd, o := a.apiCommand("set-profiles --profiles FILE|-",
		"replace the whole reservation profile set (admin; at most 64)",
		`set-profiles replaces the profile set with --profiles (a JSON array of profiles:
{name, version, weights, max, fairness, disk, telemetry_max_age_ms, mode}; a
file, - for standard input, or the JSON) and prints the set. --filename gives the
whole body ({profiles}) instead.`, nil)
	fs := cmd.Flags()
	profiles := fs.String("profiles", "", "the profiles: a JSON array, a file holding one, or - for standard input (required)")
	markBody(fs, "profiles")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.ProfilesRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "profiles"); err != nil {
				return err
			}
			raw, err := a.readSource("profiles", *profiles)
			if err != nil {
				return err
			}
			return decodeStrict("profiles", raw, &req.Profiles)
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().SetProfiles(ctx, req)
		})
	}
	return cmd
}
