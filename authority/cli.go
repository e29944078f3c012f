package authority

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/domain"
)

const cliUsage = `usage: arbiter concept <command> [flags]

commands (each takes the flags that reach a cluster: --addr, --token, --ca):
  reserve      claim a concept id (RMDD-27, RMDD-SEARCH-7) --concept-id --tenant --owner --request --purpose [--repository --lane --design --provenance a,b --ttl 24h]
  reserve-next claim the first free number        --namespace [--prefix SEARCH] --from --to and the reserve flags but --concept-id
  transition   move a claim you hold              --concept-id --tenant --owner --reservation --fingerprint --fence --action [--repo DIR]
               (with --repo, a claim that was materialized is projected again: its fragment and the view follow)
  materialize  transition to materialized, then project into a repository   the transition flags but --action, and --repo DIR
  sync         project a claim's current record into a repository           --concept-id --tenant --repo DIR
               (repairs what reconcile reports after a transition made without --repo)
  reconcile    compare a tenant's claims with a repository's projection      --tenant --repo DIR [--max 1000] [--markers RMDD-1,GOC-2]
  get          read one claim                     --concept-id [--tenant]
  list         read a tenant's claims             --tenant [--after CURSOR] [--limit N]
  policies     read the cluster's replicated namespace policy set
  set-policies replace it (admins)                --file F (as --concept-policies reads it; its version, if any, must be newer; none: the next)
`

func cli() *domain.CLI {
	return &domain.CLI{Name: "concept", Summary: "reserve and move concept ids (arbiter concept for its commands)", Run: runCLI}
}

// commandFlags are the flags each command takes, besides those that reach
// a cluster: its --help lists only these, and any other is refused.
var commandFlags = map[string][]string{
	"reserve":      {"concept-id", "tenant", "owner", "request", "purpose", "repository", "lane", "design", "provenance", "ttl"},
	"reserve-next": {"namespace", "prefix", "from", "to", "tenant", "owner", "request", "purpose", "repository", "lane", "design", "provenance", "ttl"},
	"transition":   {"concept-id", "tenant", "owner", "reservation", "fingerprint", "fence", "action", "repo"},
	"materialize":  {"concept-id", "tenant", "owner", "reservation", "fingerprint", "fence", "repo"},
	"sync":         {"concept-id", "tenant", "repo"},
	"reconcile":    {"tenant", "repo", "max", "markers"},
	"get":          {"concept-id", "tenant"},
	"list":         {"tenant", "after", "limit"},
	"policies":     {},
	"set-policies": {"file"},
}

func runCLI(env domain.CLIEnv, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, cliUsage)
		return errors.New("missing concept command")
	}
	cmd, args := args[0], args[1:]
	takes, known := commandFlags[cmd]
	if !known {
		fmt.Fprint(env.Stderr, cliUsage)
		return fmt.Errorf("unknown concept command %q", cmd)
	}
	fs := flag.NewFlagSet("concept "+cmd, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var (
		rr           ReserveRequest
		tr           TransitionRequest
		provenance   string
		ttl          time.Duration
		action       string
		repo         string
		markers      string
		maxRecords   int
		list         ListRequest
		next         ReserveNextRequest
		conceptID    string
		tenant, own  string
		reservation  string
		fingerprint  string
		expectedFnce uint64
	)
	fs.StringVar(&conceptID, "concept-id", "", "complete concept id, e.g. RMDD-27")
	fs.StringVar(&tenant, "tenant", "", "opaque tenant ref")
	fs.StringVar(&own, "owner", "", "opaque owner ref")
	fs.StringVar(&rr.RequestRef, "request", "", "request key (retry with the same one)")
	fs.StringVar(&rr.PurposeDigest, "purpose", "", "purpose digest")
	fs.StringVar(&rr.RepositoryRef, "repository", "", "repository ref")
	fs.StringVar(&rr.LaneRef, "lane", "", "lane ref")
	fs.StringVar(&rr.DesignRef, "design", "", "design ref")
	fs.StringVar(&provenance, "provenance", "", "comma-separated provenance refs")
	fs.DurationVar(&ttl, "ttl", 0, "reservation lifetime (default 24h)")
	fs.StringVar(&next.Namespace, "namespace", "", "namespace for reserve-next")
	fs.StringVar(&next.Prefix, "prefix", "", "semantic prefix for reserve-next (NAMESPACE-PREFIX-<n> ids, as a policy declares)")
	fs.Uint64Var(&next.From, "from", 0, "first candidate number")
	fs.Uint64Var(&next.To, "to", 0, "last candidate number")
	fs.StringVar(&reservation, "reservation", "", "reservation id you hold")
	fs.StringVar(&fingerprint, "fingerprint", "", "fingerprint of your claim")
	fs.Uint64Var(&expectedFnce, "fence", 0, "the fence you hold: the fence field of the record your last reserve or transition returned")
	fs.StringVar(&action, "action", "", "materialize, land, tombstone, release or expire")
	fs.StringVar(&repo, "repo", "", "repository working tree for the projection")
	fs.StringVar(&markers, "markers", "", "comma-separated concept ids referenced by sources")
	fs.IntVar(&maxRecords, "max", 1000, "reconcile bound")
	fs.StringVar(&list.After, "after", "", "list cursor")
	fs.IntVar(&list.Limit, "limit", 0, "list page size")
	var policyFile string
	fs.StringVar(&policyFile, "file", "", `policy file: {"version": N, "policies": [...]} or a bare array of policies`)
	domainFlags := map[string]bool{} // the flags above, of every command
	fs.VisitAll(func(f *flag.Flag) { domainFlags[f.Name] = true })
	connect := env.Connect(fs)
	fs.Usage = func() { commandUsage(fs, cmd, domainFlags, takes) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	var foreign []string
	fs.Visit(func(f *flag.Flag) {
		if domainFlags[f.Name] && !slices.Contains(takes, f.Name) {
			foreign = append(foreign, "--"+f.Name)
		}
	})
	if len(foreign) > 0 {
		return fmt.Errorf("concept %s does not take %s (see arbiter concept %s --help)", cmd, strings.Join(foreign, ", "), cmd)
	}
	conn, err := connect()
	if err != nil {
		return err
	}
	client := NewClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rr.ConceptID, rr.TenantRef, rr.OwnerRef, rr.TTLMs = conceptID, tenant, own, ttl.Milliseconds()
	if provenance != "" {
		rr.ProvenanceRefs = strings.Split(provenance, ",")
	}
	tr = TransitionRequest{ConceptID: conceptID, TenantRef: tenant, OwnerRef: own,
		ReservationID: reservation, Fingerprint: fingerprint, ExpectedFence: expectedFnce, Action: Action(action)}
	var out any
	switch cmd {
	case "reserve":
		out, err = client.Reserve(ctx, rr)
	case "reserve-next":
		rr.ConceptID, next.Request = "", rr
		out, err = client.ReserveNextNumeric(ctx, next)
	case "transition":
		if repo != "" {
			out, err = NewConceptReservationService(client, repo).Transition(ctx, tr)
		} else {
			out, err = client.Transition(ctx, tr)
		}
	case "sync":
		if repo == "" {
			return errors.New("--repo is required")
		}
		out, err = NewConceptReservationService(client, repo).Sync(ctx, conceptID, tenant)
	case "materialize":
		if repo == "" {
			return errors.New("--repo is required")
		}
		out, err = NewConceptReservationService(client, repo).Materialize(ctx, MaterializeRequest{
			ConceptID: conceptID, TenantRef: tenant, OwnerRef: own, ReservationID: reservation, Fingerprint: fingerprint, ExpectedFence: expectedFnce})
	case "reconcile":
		if repo == "" {
			return errors.New("--repo is required")
		}
		req := ReconcileRequest{TenantRef: tenant, MaxRecords: maxRecords}
		if markers != "" {
			req.SourceMarkers = strings.Split(markers, ",")
		}
		out, err = NewConceptReservationService(client, repo).ReconcileProjection(ctx, req)
	case "get":
		out, err = client.Get(ctx, conceptID, tenant)
	case "list":
		list.TenantRef = tenant
		out, err = client.List(ctx, list)
	case "policies":
		out, err = client.Policies(ctx)
	case "set-policies":
		if policyFile == "" {
			return errors.New("--file is required")
		}
		ps, err := LoadPolicyFile(policyFile)
		if err != nil {
			return err
		}
		out, err = client.SetPolicies(ctx, PoliciesRequest{Version: ps.Version(), Policies: ps.Policies()})
		if err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// commandUsage prints the flags cmd takes: its own (takes) and those that
// reach a cluster (every flag of fs not in own).
func commandUsage(fs *flag.FlagSet, cmd string, own map[string]bool, takes []string) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if !own[f.Name] || slices.Contains(takes, f.Name) {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue // not a value parsed before --help
		}
	})
	shown.SetOutput(fs.Output())
	fmt.Fprintf(fs.Output(), "Usage of concept %s:\n", cmd)
	shown.PrintDefaults()
}
