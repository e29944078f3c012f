package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// `arbiter concept`: the concept reservation authority (/v1/concepts)
// through package client. The commands that also project into a
// repository working tree (materialize, transition --repo, sync,
// reconcile) use authority.ConceptReservationService for that local
// part, over the client (conceptAuthority).

func (a *app) conceptCommand() *cobra.Command {
	return group("concept", "reserve concept ids (RMDD-27) and move their fenced lifecycle; project claims into a repository",
		`concept speaks the concept reservation routes (/v1/concepts):

  concept reserve       claim a concept id for a request
  concept reserve-next  claim the first free number of a namespace
  concept transition    move a claim you hold (materialize, land, tombstone, release, expire)
  concept materialize   transition to materialized, then project into --repo
  concept sync          project a claim's current record into --repo
  concept reconcile     compare a tenant's claims with --repo's projection
  concept get | list    read one claim, or a tenant's claims a page at a time
  concept policies      the cluster's namespace policy set
  concept set-policies  replace it (admin)

Answers print as JSON (-o table for a table). A claim held by another is
refused with exit status 3 (conflict, stale_fence, exhausted); a request
the cluster finds invalid exits 2.`,
		a.conceptReserveCommand(), a.conceptReserveNextCommand(), a.conceptTransitionCommand(),
		a.conceptMaterializeCommand(), a.conceptSyncCommand(), a.conceptReconcileCommand(),
		a.conceptGetCommand(), a.conceptListCommand(), a.conceptPoliciesCommand(), a.conceptSetPoliciesCommand())
}

// reserveFlags are the fields of a reserve request (all but the concept
// id), shared by reserve and reserve-next.
type reserveFlags struct {
	tenant, owner            string
	purpose                  *digestFlag
	repository, lane, design string
	provenance               []string
	ttl                      time.Duration
	key                      *idemKey
}

func addReserveFlags(fs *pflag.FlagSet) *reserveFlags {
	r := &reserveFlags{}
	fs.StringVar(&r.tenant, "tenant", "", "tenant_ref (required)")
	fs.StringVar(&r.owner, "owner", "", "owner_ref (with authentication leave it out: the owner is your principal)")
	r.key = keyFlag(fs, "request", "request_ref: the request's key; the same request again replays its claim (default: a new key, printed on an unknown outcome)")
	r.purpose = addDigestFlag(fs, "purpose", "purpose_digest", "the purpose")
	fs.StringVar(&r.repository, "repository", "", "repository_ref")
	fs.StringVar(&r.lane, "lane", "", "lane_ref")
	fs.StringVar(&r.design, "design", "", "design_ref")
	fs.StringSliceVar(&r.provenance, "provenance", nil, "provenance_refs (repeat, or a comma list)")
	fs.DurationVar(&r.ttl, "ttl", 0, "how long the reservation lasts before it may expire, e.g. 24h (default: the cluster's, 24h)")
	_ = cobra.MarkFlagRequired(fs, "tenant")
	return r
}

// request builds the reserve fields the flags give.
func (r *reserveFlags) request() (client.ReserveRequest, error) {
	digest, err := r.purpose.value()
	if err != nil {
		return client.ReserveRequest{}, err
	}
	if r.ttl < 0 {
		return client.ReserveRequest{}, usageErrorf("--ttl %v: want a positive duration", r.ttl)
	}
	return client.ReserveRequest{TenantRef: r.tenant, OwnerRef: r.owner, RequestRef: r.key.get(), PurposeDigest: digest,
		RepositoryRef: r.repository, LaneRef: r.lane, DesignRef: r.design, ProvenanceRefs: r.provenance,
		TTLMs: r.ttl.Milliseconds()}, nil
}

func (a *app) conceptReserveCommand() *cobra.Command {
	cmd, o := a.apiCommand("reserve --concept-id ID --tenant T (--purpose-text TEXT | --purpose DIGEST) [flags]",
		"claim a concept id for a request",
		`reserve claims --concept-id (RMDD-27, RMDD-SEARCH-7) under the cluster's namespace
policies. The answer is {record, created, reclaimed, replayed}: pass the
record's reservation_id, fingerprint and fence to the next transition.

--request is the request's key: the same request again (every field the same)
answers the claim it made (replayed). Without --request the command makes
one; if the outcome is unknown it prints "retry with: --request K" on stderr.
Another holder is a conflict (exit 3); an id no policy covers is invalid
(exit 2).

  arbiter concept reserve --concept-id RMDD-27 --tenant team-a --owner agent-7 \
      --request req-1 --purpose-text "search ranking design"`, nil)
	fs := cmd.Flags()
	id := fs.String("concept-id", "", "the concept id, e.g. RMDD-27 (required)")
	_ = cmd.MarkFlagRequired("concept-id")
	r := addReserveFlags(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		req, err := r.request()
		if err != nil {
			return err
		}
		req.ConceptID = *id
		return r.key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Concepts().Reserve(ctx, req)
		}))
	}
	return cmd
}

func (a *app) conceptReserveNextCommand() *cobra.Command {
	cmd, o := a.apiCommand("reserve-next --namespace NS --from N --to M --tenant T (--purpose-text TEXT | --purpose DIGEST) [flags]",
		"claim the first free number of a namespace (and prefix)",
		`reserve-next claims the first free id NAMESPACE-N (or NAMESPACE-PREFIX-N) for
N in --from..--to (at most 128 numbers). Every one held is exhausted (exit 3).
It takes the flags of reserve but --concept-id.`, nil)
	fs := cmd.Flags()
	ns := fs.String("namespace", "", "the namespace, e.g. RMDD (required)")
	prefix := fs.String("prefix", "", "the semantic prefix a policy declares, e.g. SEARCH")
	from := fs.Uint64("from", 0, "the first candidate number (required)")
	to := fs.Uint64("to", 0, "the last candidate number (required)")
	for _, n := range []string{"namespace", "from", "to"} {
		_ = cmd.MarkFlagRequired(n)
	}
	r := addReserveFlags(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		req, err := r.request()
		if err != nil {
			return err
		}
		next := client.ReserveNextRequest{Namespace: *ns, Prefix: *prefix, From: *from, To: *to, Request: req}
		return r.key.advise(a, a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Concepts().ReserveNext(ctx, next)
		}))
	}
	return cmd
}

// holderFlags name a claim and the fence its holder holds.
type holderFlags struct {
	id, tenant, owner, reservation, fingerprint string
	fence                                       uint64
}

func addHolderFlags(cmd *cobra.Command) *holderFlags {
	h := &holderFlags{}
	fs := cmd.Flags()
	fs.StringVar(&h.id, "concept-id", "", "the concept id (required)")
	fs.StringVar(&h.tenant, "tenant", "", "tenant_ref (required)")
	fs.StringVar(&h.owner, "owner", "", "owner_ref (with authentication leave it out: the owner is your principal)")
	fs.StringVar(&h.reservation, "reservation", "", "the reservation_id you hold (required)")
	fs.StringVar(&h.fingerprint, "fingerprint", "", "the fingerprint of your claim (required)")
	fs.Uint64Var(&h.fence, "fence", 0, "the fence you hold: the fence field of the record your last reserve or transition answered (required)")
	for _, n := range []string{"concept-id", "tenant", "reservation", "fingerprint", "fence"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return h
}

func (h *holderFlags) transition(action string) authority.TransitionRequest {
	return authority.TransitionRequest{ConceptID: h.id, TenantRef: h.tenant, OwnerRef: h.owner, ReservationID: h.reservation,
		Fingerprint: h.fingerprint, ExpectedFence: h.fence, Action: authority.Action(action)}
}

func (a *app) conceptTransitionCommand() *cobra.Command {
	cmd, o := a.apiCommand("transition --concept-id ID --tenant T --reservation R --fingerprint F --fence N --action A [--repo DIR]",
		"move a claim you hold: materialize, land, tombstone, release or expire",
		`transition moves a claim, presenting the fence you hold; the record comes back
with its new fence (pass it to the next transition). Another fence is
stale_fence (exit 3). A retry of a transition that committed answers it again
(replayed), so a transition is safe to repeat after an unknown outcome.

With --repo, a claim that was materialized is projected again into the
repository working tree DIR: its fragment and view.json follow.`, nil)
	h := addHolderFlags(cmd)
	action := cmd.Flags().String("action", "", "materialize, land, tombstone, release or expire (required)")
	repo := cmd.Flags().String("repo", "", "a repository working tree to keep the claim's projection in step in")
	_ = cmd.MarkFlagRequired("action")
	cmd.RunE = func(*cobra.Command, []string) error {
		req := h.transition(*action)
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			if *repo != "" {
				return authority.NewConceptReservationService(conceptAuthority{c.Concepts()}, *repo).Transition(ctx, req)
			}
			return c.Concepts().Transition(ctx, client.TransitionRequest{ConceptID: req.ConceptID, TenantRef: req.TenantRef,
				OwnerRef: req.OwnerRef, ReservationID: req.ReservationID, Fingerprint: req.Fingerprint,
				ExpectedFence: req.ExpectedFence, Action: string(req.Action)})
		})
	}
	return cmd
}

func (a *app) conceptMaterializeCommand() *cobra.Command {
	cmd, o := a.apiCommand("materialize --concept-id ID --tenant T --reservation R --fingerprint F --fence N --repo DIR",
		"transition to materialized, then project the claim into a repository",
		`materialize moves the claim to materialized, then appends its record to the
owner's fragment in DIR/concepts/fragments/ and regenerates DIR/concepts/view.json.
Run again with the same fence after a crash, it replays the transition and
repeats only the projection. It prints the record.`, nil)
	h := addHolderFlags(cmd)
	repo := cmd.Flags().String("repo", "", "the repository working tree (required)")
	_ = cmd.MarkFlagRequired("repo")
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return authority.NewConceptReservationService(conceptAuthority{c.Concepts()}, *repo).Materialize(ctx, authority.MaterializeRequest{
				ConceptID: h.id, TenantRef: h.tenant, OwnerRef: h.owner, ReservationID: h.reservation,
				Fingerprint: h.fingerprint, ExpectedFence: h.fence})
		})
	}
	return cmd
}

func (a *app) conceptSyncCommand() *cobra.Command {
	cmd, o := a.apiCommand("sync --concept-id ID --tenant T --repo DIR",
		"project a claim's current record into a repository",
		`sync reads the claim and projects its record into DIR: the repair for a
transition made without --repo, which reconcile reports as a state mismatch.
A claim never materialized has no projection (conflict, exit 3).`, nil)
	fs := cmd.Flags()
	id := fs.String("concept-id", "", "the concept id (required)")
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	repo := fs.String("repo", "", "the repository working tree (required)")
	for _, n := range []string{"concept-id", "tenant", "repo"} {
		_ = cmd.MarkFlagRequired(n)
	}
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return authority.NewConceptReservationService(conceptAuthority{c.Concepts()}, *repo).Sync(ctx, *id, *tenant)
		})
	}
	return cmd
}

func (a *app) conceptReconcileCommand() *cobra.Command {
	cmd, o := a.apiCommand("reconcile --tenant T --repo DIR [--max N] [--markers RMDD-1,GOC-2]",
		"compare a tenant's claims with a repository's projection",
		`reconcile reads the tenant's claims (all of them, at most --max) and DIR's
fragments and view, and reports projections missing, orphan records, state
mismatches (repair them with sync) and markers without claims. It changes
nothing.`, nil)
	fs := cmd.Flags()
	tenant := fs.String("tenant", "", "tenant_ref (required)")
	repo := fs.String("repo", "", "the repository working tree (required)")
	maxRecords := fs.Int("max", 1000, fmt.Sprintf("bound of claims, projected records and markers alike, 1..%d (more is an error, never a partial answer)", authority.MaxReconcileRecords))
	markers := fs.StringSlice("markers", nil, "concept ids referenced by sources (repeat, or a comma list)")
	_ = cmd.MarkFlagRequired("tenant")
	_ = cmd.MarkFlagRequired("repo")
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return authority.NewConceptReservationService(conceptAuthority{c.Concepts()}, *repo).ReconcileProjection(ctx,
				authority.ReconcileRequest{TenantRef: *tenant, MaxRecords: *maxRecords, SourceMarkers: *markers})
		})
	}
	return cmd
}

func (a *app) conceptGetCommand() *cobra.Command {
	cmd, o := a.apiCommand("get --concept-id ID [--tenant T]", "read one claim",
		"get prints the claim's record; another tenant's claim is not found (exit 1).", nil)
	id := cmd.Flags().String("concept-id", "", "the concept id (required)")
	tenant := cmd.Flags().String("tenant", "", "tenant_ref")
	_ = cmd.MarkFlagRequired("concept-id")
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Concepts().Get(ctx, *id, *tenant)
		})
	}
	return cmd
}

func (a *app) conceptListCommand() *cobra.Command {
	cmd, o := a.apiCommand("list --tenant T [--after CURSOR] [--limit N]", "read a tenant's claims, a page at a time",
		"list prints one page {records, next_cursor}; --after takes the next_cursor.", nil)
	tenant := cmd.Flags().String("tenant", "", "tenant_ref (required)")
	_ = cmd.MarkFlagRequired("tenant")
	p := addPageFlags(cmd.Flags(), false)
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Concepts().List(ctx, *tenant, p.query())
		})
	}
	return cmd
}

func (a *app) conceptPoliciesCommand() *cobra.Command {
	cmd, o := a.apiCommand("policies", "the cluster's replicated namespace policy set",
		"policies prints {configured, version, policies, digest, source, set_at_ms}.", nil)
	stale := staleFlag(cmd.Flags())
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Concepts().Policies(ctx, consistencyOf(stale))
		})
	}
	return cmd
}

func (a *app) conceptSetPoliciesCommand() *cobra.Command {
	cmd, o := a.apiCommand("set-policies --file F", "replace the namespace policy set (admin)",
		`set-policies replaces the cluster's policy set with the one in --file, read
as serve's --concept-policies reads it: {"version": N, "policies": [...]} or a
bare array of policies. Its version, if any, must be newer than the cluster's
(else conflict, exit 3); without one the cluster takes the next. The same set
again changes nothing (changed: false).`, nil)
	file := cmd.Flags().String("file", "", "the policy file (required)")
	_ = cmd.MarkFlagRequired("file")
	cmd.RunE = func(*cobra.Command, []string) error {
		ps, err := authority.LoadPolicyFile(*file)
		if err != nil {
			return usageError{err}
		}
		var req client.PoliciesRequest
		if err := convert(authority.PoliciesRequest{Version: ps.Version(), Policies: ps.Policies()}, &req); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Concepts().SetPolicies(ctx, req)
		})
	}
	return cmd
}

// conceptAuthority is authority.Authority over package client, for the
// repository projection (authority.ConceptReservationService). The two
// sides' types are the same JSON (client's drift test pins it): each
// call converts through it.
type conceptAuthority struct{ c *client.Concepts }

var _ authority.Authority = conceptAuthority{}

func (x conceptAuthority) Authoritative() bool { return true }

func (x conceptAuthority) Reserve(ctx context.Context, req authority.ReserveRequest) (*authority.ReserveResult, error) {
	var in client.ReserveRequest
	if err := convert(req, &in); err != nil {
		return nil, err
	}
	return converted[authority.ReserveResult](x.c.Reserve(ctx, in))
}

func (x conceptAuthority) ReserveNextNumeric(ctx context.Context, req authority.ReserveNextRequest) (*authority.ReserveResult, error) {
	var in client.ReserveNextRequest
	if err := convert(req, &in); err != nil {
		return nil, err
	}
	return converted[authority.ReserveResult](x.c.ReserveNext(ctx, in))
}

func (x conceptAuthority) Transition(ctx context.Context, req authority.TransitionRequest) (*authority.TransitionResult, error) {
	var in client.TransitionRequest
	if err := convert(req, &in); err != nil {
		return nil, err
	}
	return converted[authority.TransitionResult](x.c.Transition(ctx, in))
}

func (x conceptAuthority) Get(ctx context.Context, conceptID, tenantRef string) (*authority.Record, error) {
	return converted[authority.Record](x.c.Get(ctx, conceptID, tenantRef))
}

func (x conceptAuthority) List(ctx context.Context, req authority.ListRequest) (*authority.RecordPage, error) {
	return converted[authority.RecordPage](x.c.List(ctx, req.TenantRef, client.PageQuery{After: req.After, Limit: req.Limit}))
}

// convert copies from into to through their JSON.
func convert(from, to any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "encode %T: %v", from, err)
	}
	if err := json.Unmarshal(raw, to); err != nil {
		return errs.Errorf(errs.CodeInternal, "decode %T as %T: %v", from, to, err)
	}
	return nil
}

// converted is a call's answer as a T.
func converted[T any, F any](from *F, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	var out T
	if err := convert(from, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
