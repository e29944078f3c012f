package main

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/workitem/extension"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `arbiter workitem`: work-item admission (/v1/workitems) and host
// resource reservation (/v1/workitems/hosts, reserve, release, ...).

func (a *app) workitemCommand() *cobra.Command {
	return group("workitem", "work items and host reservations: submit, claim, complete, cancel; hosts, reserve, release",
		`workitem speaks the work-item routes (/v1/workitems):

  workitem submit | batch       admit one work item, or 1..128 all or nothing
  workitem claim                claim the claimable item of highest priority (or --id)
  workitem complete | cancel    end a claim succeeded or failed; cancel an item
  workitem get | list           one item, or a tenant's items a page at a time
  workitem host | telemetry     add or change a shared host; report its free disk
  workitem hosts                the shared hosts (use, free, telemetry age), a page at a time
  workitem reserve | release    reserve a host for a claim; end the reservation
  workitem reclaim              end reservations whose claim expired
  workitem query                reservations, hosts and fairness debts, a page at a time
  workitem profiles             the reservation profile set (set-profiles replaces it, admin)
  workitem extension            set the reservation record of an item that has none (admin)

Every write takes typed flags; --filename FILE|-|JSON gives the whole request body
instead (refused together with the flags that set its fields). Digests are
given as they are (--command sha256:...), or computed from text or a file
(--command-text, --command-file); a resource-reservation record (--reservation,
extension --record) is sealed: the CLI computes its v1: fingerprint. Answers
print as JSON (-o table for a table). A request the cluster finds invalid exits
2; a refusal it decided (a conflict, a stale fence, no capacity) exits 3.`,
		a.workitemSubmitCommand(), a.workitemBatchCommand(), a.workitemClaimCommand(), a.workitemCompleteCommand(),
		a.workitemCancelCommand(), a.workitemGetCommand(), a.workitemListCommand(), a.workitemHostCommand(),
		a.workitemHostsCommand(), a.workitemTelemetryCommand(), a.workitemReserveCommand(), a.workitemReleaseCommand(), a.workitemReclaimCommand(),
		a.workitemQueryCommand(), a.workitemProfilesCommand(), a.workitemSetProfilesCommand(), a.workitemExtensionCommand())
}

// requireFlags is a usage error naming the flags of names not given.
func requireFlags(fs *pflag.FlagSet, names ...string) error {
	var missing []string
	for _, n := range names {
		if !fs.Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return usageErrorf("%v required (or --filename)", missing)
}

// sealRecord reads a resource-reservation record (without its
// fingerprint, or with one the CLI replaces) and seals it: the record
// as canonical JSON with its v1: fingerprint (extension.Seal, the Go
// form of the Python client's seal_reservation).
func sealRecord(flag string, raw []byte) (json.RawMessage, error) {
	var e extension.Extension
	if err := decodeStrict(flag, raw, &e); err != nil {
		return nil, err
	}
	_, out, err := extension.Seal(e)
	if err != nil {
		return nil, usageErrorf("--%s: %v", flag, err)
	}
	return out, nil
}

// sealMetadata seals metadata.resource_reservation when it carries no
// fingerprint (a record given as --filename's field, or --reservation).
func sealMetadata(flag string, meta json.RawMessage) (json.RawMessage, error) {
	if len(meta) == 0 {
		return meta, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(meta, &m); err != nil {
		return nil, usageErrorf("--%s: metadata is not a JSON object: %v", flag, err)
	}
	rec, ok := m["resource_reservation"]
	if !ok {
		return meta, nil
	}
	var fp struct {
		Fingerprint string `json:"fingerprint"`
	}
	if json.Unmarshal(rec, &fp) == nil && fp.Fingerprint != "" {
		return meta, nil // sealed already: the server checks it
	}
	sealed, err := sealRecord(flag, rec)
	if err != nil {
		return nil, err
	}
	m["resource_reservation"] = sealed
	return json.Marshal(m)
}

// submitFlags are the fields of a submit request.
type submitFlags struct {
	fs                                 *pflag.FlagSet
	tenant, graph, id, kind, input     *string
	priority, maxAttempts, maxInFlight *int64
	deadline                           *string
	dependsOn, provenance              *[]string
	metadata, reservation              *string
	command, policy, catalog, model    *digestFlag
}

func addSubmitFlags(fs *pflag.FlagSet) *submitFlags {
	s := &submitFlags{fs: fs,
		tenant:      fs.String("tenant", "", "tenant_ref (required)"),
		graph:       fs.String("graph", "", "graph_ref (default: default)"),
		id:          fs.String("id", "", "work_item_id (default: the cluster names it)"),
		kind:        fs.String("kind", "", "the item's kind (required)"),
		input:       fs.String("input-ref", "", "input_ref: what the work reads"),
		priority:    fs.Int64("priority", 0, "higher is claimed first"),
		maxAttempts: fs.Int64("max-attempts", 1, "claims the item may take, 1..4096"),
		maxInFlight: fs.Int64("max-tenant-in-flight", 4096, "refuse (exhausted) when the tenant has this many items in flight, 1..4096"),
		deadline:    fs.String("deadline", "", "deadline_unix: RFC 3339 time or Unix seconds"),
		dependsOn:   fs.StringSlice("depends-on", nil, "work_item_ids it waits for (repeat, or a comma list)"),
		provenance:  fs.StringSlice("provenance", nil, "provenance_refs (repeat, or a comma list)"),
		metadata:    fs.String("metadata", "", "metadata: a JSON object, a file holding one, or - for standard input"),
		reservation: fs.String("reservation", "", "a resource-reservation record (JSON, file or -), sealed with its v1: fingerprint into metadata.resource_reservation"),
	}
	s.command = addDigestFlag(fs, "command", "command_digest", "the command")
	s.policy = addDigestFlag(fs, "policy", "policy_digest", "the policy")
	s.catalog = addDigestFlag(fs, "catalog", "catalog_digest", "the catalog")
	s.model = addDigestFlag(fs, "model", "model_digest", "the model")
	markBody(fs, "tenant", "graph", "id", "kind", "input-ref", "priority", "max-attempts", "max-tenant-in-flight", "deadline",
		"depends-on", "provenance", "metadata", "reservation")
	for _, d := range []string{"command", "policy", "catalog", "model"} {
		markBody(fs, d, d+"-text", d+"-file")
	}
	return s
}

// request builds the submit request the flags give.
func (s *submitFlags) request(a *app) (client.SubmitRequest, error) {
	if err := requireFlags(s.fs, "tenant", "kind"); err != nil {
		return client.SubmitRequest{}, err
	}
	req := client.SubmitRequest{TenantRef: *s.tenant, GraphRef: *s.graph, WorkItemID: *s.id, Kind: *s.kind, InputRef: *s.input,
		Priority: *s.priority, MaxAttempts: *s.maxAttempts, MaxTenantInFlight: *s.maxInFlight,
		DependsOn: nonNilStrings(*s.dependsOn), ProvenanceRefs: nonNilStrings(*s.provenance)}
	for _, d := range []struct {
		f  *digestFlag
		to *string
	}{{s.command, &req.CommandDigest}, {s.policy, &req.PolicyDigest}, {s.catalog, &req.CatalogDigest}, {s.model, &req.ModelDigest}} {
		v, err := d.f.value()
		if err != nil {
			return req, err
		}
		*d.to = v
	}
	if *s.deadline != "" {
		u, err := unixTime(*s.deadline)
		if err != nil {
			return req, usageErrorf("--deadline %q: want an RFC 3339 time or Unix seconds", *s.deadline)
		}
		req.DeadlineUnix = &u
	}
	meta := map[string]json.RawMessage{}
	if *s.metadata != "" {
		raw, err := a.readSource("metadata", *s.metadata)
		if err != nil {
			return req, err
		}
		if err := decodeStrict("metadata", raw, &meta); err != nil {
			return req, err
		}
	}
	if *s.reservation != "" {
		if _, ok := meta["resource_reservation"]; ok {
			return req, usageErrorf("--reservation: --metadata holds a resource_reservation already")
		}
		raw, err := a.readSource("reservation", *s.reservation)
		if err != nil {
			return req, err
		}
		if meta["resource_reservation"], err = sealRecord("reservation", raw); err != nil {
			return req, err
		}
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return req, err
	}
	req.Metadata, err = sealMetadata("metadata", raw)
	return req, err
}

// unixTime reads Unix seconds or an RFC 3339 time.
func unixTime(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, err
	}
	return t.Unix(), nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// keyOver is the request's idempotency key: --idempotency-key when
// given (over the body's), else the body's, else a new one.
func keyOver(key *idemKey, body *string) string {
	if *key.value == "" && *body != "" {
		*key.value = *body
	}
	*body = key.get()
	return *body
}

func (a *app) workitemSubmitCommand() *cobra.Command {
	cmd, o := a.apiCommand("submit --tenant T --kind K --command-text C --policy-file P --catalog-file C --model D [flags]",
		"admit one work item (201), or replay its admission",
		`submit admits one work item and prints {work_item_id, status, created, replayed, ...}.
The four digests are given as they are (--command sha256:...), or computed
from text (--command-text) or a file (--command-file). --reservation takes a
resource-reservation record (JSON, a file, or -) without its fingerprint: the
CLI seals it (schema_version, empty lists, the v1: fingerprint) into
metadata.resource_reservation. A record given inside --metadata or --filename
without a fingerprint is sealed the same way.

--idempotency-key makes a retry answer the first admission (replayed); without
one the command makes a key and, if the outcome is unknown, prints "retry with:
--idempotency-key K" on stderr. --filename gives the whole body instead of the
field flags (its idempotency_key is used unless --idempotency-key is given).
A tenant at its cap (exhausted) and an id in use exit 3.

  arbiter workitem submit --tenant acme --kind build --input-ref repo@abc \
      --command-text "make test" --policy-file policy.json --catalog-file catalog.json \
      --model sha256:... --max-attempts 3`, nil)
	fs := cmd.Flags()
	s := addSubmitFlags(fs)
	key := keyFlag(fs, "idempotency-key", "the submit's idempotency key (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.SubmitRequest
		if err := a.bodyOr(fs, *body, &req, func() (err error) { req, err = s.request(a); return err }); err != nil {
			return err
		}
		var err error
		if req.Metadata, err = sealMetadata("json", req.Metadata); err != nil {
			return err
		}
		keyOver(key, &req.IdempotencyKey)
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.WorkItems().Submit(ctx, req)
		}))
	}
	return cmd
}

func (a *app) workitemBatchCommand() *cobra.Command {
	cmd, o := a.apiCommand("batch --tenant T --items FILE|- [--graph G] [--idempotency-key K]",
		"admit 1..128 work items in one command, all or nothing",
		`batch admits the items of --items (a JSON array of submit requests without
tenant_ref and idempotency_key: a file, - for standard input, or the JSON) and
prints {results, batch_sequence_range, ...}, in request order; a child may
depend on an earlier one. Reservation records without a fingerprint are sealed
as submit does. --idempotency-key as submit; --filename gives the whole body
({tenant_ref, graph_ref, idempotency_key, requests}) instead.`, nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	graph := fs.String("graph", "", "graph_ref (default: default)")
	items := fs.String("items", "", "the requests: a JSON array, a file holding one, or - for standard input (required)")
	markBody(fs, "tenant", "graph", "items")
	key := keyFlag(fs, "idempotency-key", "the batch's idempotency key (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.BatchRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "items"); err != nil {
				return err
			}
			raw, err := a.readSource("items", *items)
			if err != nil {
				return err
			}
			req = client.BatchRequest{TenantRef: *tenant, GraphRef: *graph}
			return decodeStrict("items", raw, &req.Requests)
		}); err != nil {
			return err
		}
		for i := range req.Requests {
			var err error
			if req.Requests[i].Metadata, err = sealMetadata("items", req.Requests[i].Metadata); err != nil {
				return err
			}
		}
		keyOver(key, &req.IdempotencyKey)
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.WorkItems().SubmitBatch(ctx, req)
		}))
	}
	return cmd
}

func (a *app) workitemClaimCommand() *cobra.Command {
	cmd, o := a.apiCommand("claim --tenant T --owner O --ttl 60s [--graph G] [--kinds a,b] [--id ID] [--idempotency-key K]",
		"claim the claimable item of highest priority, or the one named",
		`claim claims an item and prints {work_item, attempt, fence, expires_at_ms}: keep
attempt and fence for complete, reserve and release. None claimable exits 1
(not found). --idempotency-key makes a retry answer the same claim; without one
the command makes a key and prints it on an unknown outcome. --filename gives the
whole body instead of the field flags.

  arbiter workitem claim --tenant acme --owner worker-1 --ttl 60s`, nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	graph := fs.String("graph", "", "graph_ref (default: default)")
	owner := fs.String("owner", "", "owner_ref: who claims (required)")
	kinds := fs.StringSlice("kinds", nil, "kinds to claim from (repeat, or a comma list; default: any)")
	id := fs.String("id", "", "claim this work item only")
	ttl := fs.Duration("ttl", 0, "how long the claim lasts unless completed, e.g. 60s (required)")
	markBody(fs, "tenant", "graph", "owner", "kinds", "id", "ttl")
	key := keyFlag(fs, "idempotency-key", "the claim's idempotency key (default: a new key, printed on an unknown outcome)")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.ClaimRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "owner", "ttl"); err != nil {
				return err
			}
			req = client.ClaimRequest{TenantRef: *tenant, GraphRef: *graph, OwnerRef: *owner, Kinds: *kinds, WorkItemID: *id, TTLMs: ttl.Milliseconds()}
			return nil
		}); err != nil {
			return err
		}
		keyOver(key, &req.IdempotencyKey)
		return key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.WorkItems().Claim(ctx, req)
		}))
	}
	return cmd
}

// claimFlags are the fields that name a claim: tenant, item, attempt,
// fence.
type claimFlags struct {
	tenant, id *string
	attempt    *int64
	fence      *uint64
}

func addClaimFlags(fs *pflag.FlagSet) claimFlags {
	c := claimFlags{tenant: fs.String("tenant", "", "tenant_ref (required)"), id: fs.String("id", "", "work_item_id (required)"),
		attempt: fs.Int64("attempt", 0, "the attempt the claim answered (required)"),
		fence:   fs.Uint64("fence", 0, "the fence the claim answered (required)")}
	markBody(fs, "tenant", "id", "attempt", "fence")
	return c
}

func (a *app) workitemCompleteCommand() *cobra.Command {
	cmd, o := a.apiCommand("complete --tenant T --id ID --attempt N --fence F --outcome succeeded|failed [--result REF]",
		"end a claim succeeded or failed",
		`complete ends the claim and prints {work_item}. Another attempt or fence exits 3
(stale fence), and so does an expired claim. A repeat is safe: the claim names
the call. --filename gives the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	cl := addClaimFlags(fs)
	outcome := fs.String("outcome", "", "succeeded or failed (required)")
	result := fs.String("result", "", "result_ref")
	markBody(fs, "outcome", "result")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.CompleteRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "id", "attempt", "fence", "outcome"); err != nil {
				return err
			}
			req = client.CompleteRequest{TenantRef: *cl.tenant, WorkItemID: *cl.id, Attempt: *cl.attempt, Fence: *cl.fence, Outcome: *outcome, ResultRef: *result}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.WorkItems().Complete(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemCancelCommand() *cobra.Command {
	cmd, o := a.apiCommand("cancel --tenant T --id ID --reason R",
		"cancel an item that has not ended (its dependents follow)",
		"cancel cancels the item and prints {work_item}. --filename gives the whole body instead of the field flags.", nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	id := fs.String("id", "", "work_item_id (required)")
	reason := fs.String("reason", "", "why it is cancelled (required)")
	markBody(fs, "tenant", "id", "reason")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.CancelRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "id", "reason"); err != nil {
				return err
			}
			req = client.CancelRequest{TenantRef: *tenant, WorkItemID: *id, Reason: *reason}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.WorkItems().Cancel(ctx, req)
		})
	}
	return cmd
}

func (a *app) workitemGetCommand() *cobra.Command {
	cmd, o := a.apiCommand("get --tenant T --id ID [--stale]", "read a work item", "get prints {work_item}; a missing item exits 1 (not found).", nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	id := fs.String("id", "", "work_item_id (required)")
	_ = cmd.MarkFlagRequired("tenant")
	_ = cmd.MarkFlagRequired("id")
	stale := staleFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.WorkItems().Get(ctx, *tenant, *id, consistencyOf(stale))
		})
	}
	return cmd
}

func (a *app) workitemListCommand() *cobra.Command {
	cmd, o := a.apiCommand("list --tenant T [--graph G] [--status S] [--after CURSOR] [--limit N]",
		"a tenant's work items, a page at a time",
		"list prints one page {work_items, next_cursor, now_ms} in sequence order; --after takes the next_cursor.", nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	_ = cmd.MarkFlagRequired("tenant")
	graph := fs.String("graph", "", "graph_ref (default: default)")
	status := fs.String("status", "", "only items of this status (waiting, ready, claimed, succeeded, failed, cancelled, ...)")
	p := addPageFlags(fs, true)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.WorkItems().List(ctx, client.WorkItemQuery{TenantRef: *tenant, GraphRef: *graph, Status: *status, PageQuery: p.query()})
		})
	}
	return cmd
}

func (a *app) workitemExtensionCommand() *cobra.Command {
	cmd, o := a.apiCommand("extension --tenant T --id ID --fence F --record FILE|-",
		"set the reservation record of an item that has none (admin)",
		`extension sets the resource-reservation record of an item that has none, with
the item's exact current fence (0 if never claimed), and prints {work_item}.
--record is the record (JSON, a file, or -) without its fingerprint: the CLI
seals it with its v1: fingerprint. --filename gives the whole body instead (a
record there without a fingerprint is sealed too).`, nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	id := fs.String("id", "", "work_item_id (required)")
	fence := fs.Uint64("fence", 0, "the item's current fence (0: never claimed)")
	record := fs.String("record", "", "the resource-reservation record: JSON, a file, or - for standard input (required)")
	markBody(fs, "tenant", "id", "fence", "record")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.RewriteExtensionRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "tenant", "id", "record"); err != nil {
				return err
			}
			raw, err := a.readSource("record", *record)
			if err != nil {
				return err
			}
			req = client.RewriteExtensionRequest{TenantRef: *tenant, WorkItemID: *id, Fence: *fence, Extension: raw}
			return nil
		}); err != nil {
			return err
		}
		var fp struct {
			Fingerprint string `json:"fingerprint"`
		}
		if json.Unmarshal(req.Extension, &fp) == nil && fp.Fingerprint == "" {
			sealed, err := sealRecord("record", req.Extension)
			if err != nil {
				return err
			}
			req.Extension = sealed
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Reservations().RewriteExtension(ctx, req)
		})
	}
	return cmd
}
