package workitem

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
)

const cliUsage = `usage: arbiter workitem <command> [--addr URL] [flags]

  submit|batch|claim|complete|cancel [--json BODY]
      send the request (see docs/domains/workitems.md) given with --json, or on standard
      input, to POST /v1/workitems/<submit|submit-batch|claim|complete|cancel>
  claim    --tenant T --owner O --ttl 60s [--graph G] [--kinds a,b] [--id ID] [--idempotency-key K]
  complete --tenant T --id ID --attempt N --fence F --outcome succeeded|failed [--result REF]
  cancel   --tenant T --id ID --reason R
      the same requests built from flags instead of --json
  reserve|release|reclaim|query|host|telemetry|extension [--json BODY]
      the same for host resource reservation: POST /v1/workitems/<reserve|
      release|reclaim|reservations/query|hosts|hosts/telemetry|extension>
  profiles [--json BODY]
      with a body, PUT /v1/workitems/profiles (admins); without, read them
  get  --tenant T --id ID
  list --tenant T [--graph G] [--status S] [--after CURSOR] [--limit N]

Prints the answer as JSON. Examples:
  arbiter workitem claim --tenant acme --owner worker-1 --ttl 60s
  arbiter workitem claim --json '{"tenant_ref":"acme","owner_ref":"worker-1","ttl_ms":60000}'
`

// cliRoutes maps the POST commands to their routes.
var cliRoutes = map[string]string{"submit": "submit", "batch": "submit-batch", "claim": "claim", "complete": "complete", "cancel": "cancel",
	"reserve": "reserve", "release": "release", "reclaim": "reclaim", "query": "reservations/query", "host": "hosts",
	"telemetry": "hosts/telemetry", "extension": "extension", "profiles": "profiles"}

func cli() *domain.CLI {
	return &domain.CLI{Name: "workitem", Summary: "submit, claim, complete, cancel and read work items", Run: runCLI}
}

func runCLI(env domain.CLIEnv, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, cliUsage)
		return errors.New("missing workitem command")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("workitem "+cmd, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var body, tenant, id, graph, status, after *string
	var limit *int
	route, post := cliRoutes[cmd]
	var typed func() (any, bool) // the request built from flags, and whether any was given
	switch {
	case post:
		body = fs.String("json", "", "request body (default: read standard input)")
		typed = typedRequest(fs, cmd)
	case cmd == "get" || cmd == "list":
		tenant = fs.String("tenant", "", "tenant_ref")
		if cmd == "get" {
			id = fs.String("id", "", "work_item_id")
		} else {
			graph = fs.String("graph", "", "graph_ref (default: default)")
			status = fs.String("status", "", "only items of this status")
			after = fs.String("after", "", "next_cursor of the previous page")
			limit = fs.Int("limit", 0, "page size, 1-128 (default 128)")
		}
	default:
		fmt.Fprint(env.Stderr, cliUsage)
		return fmt.Errorf("unknown workitem command %q", cmd)
	}
	connect := env.Connect(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, err := connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out json.RawMessage
	var callErr error
	switch {
	case cmd == "profiles" && *body == "":
		callErr = conn.CallJSON(ctx, "GET", "/v1/workitems/profiles", nil, &out)
	case post:
		method := "POST"
		if cmd == "profiles" {
			method = "PUT"
		}
		raw := []byte(*body)
		req, given := typed()
		switch {
		case given && *body != "":
			return errors.New("give the request with --json or with flags, not both")
		case given:
			if raw, err = json.Marshal(req); err != nil {
				return err
			}
		case *body == "":
			if raw, err = io.ReadAll(io.LimitReader(env.Stdin, MaxRequestBytes+1)); err != nil {
				return err
			}
		}
		if !json.Valid(raw) {
			return errors.New("the request is not JSON")
		}
		callErr = conn.CallJSON(ctx, method, "/v1/workitems/"+route, json.RawMessage(raw), &out)
	default:
		q := url.Values{"tenant_ref": {*tenant}}
		if cmd == "get" {
			q.Set("work_item_id", *id)
		} else {
			for k, v := range map[string]string{"graph_ref": *graph, "status": *status, "after": *after} { // order-free: sets query parameters
				if v != "" {
					q.Set(k, v)
				}
			}
			if *limit != 0 {
				q.Set("limit", strconv.Itoa(*limit))
			}
		}
		callErr = conn.CallJSON(ctx, "GET", "/v1/workitems/"+cmd+"?"+q.Encode(), nil, &out)
	}
	var answer any = out
	if callErr != nil {
		answer = map[string]*errs.Error{"error": errs.From(callErr)}
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(answer); err != nil {
		return err
	}
	return callErr
}

// typedRequest registers on fs the flags that build cmd's request (claim,
// complete and cancel have them; the other commands take --json only),
// and returns what builds it once fs is parsed: the request, and whether
// any of its flags was given.
func typedRequest(fs *flag.FlagSet, cmd string) func() (any, bool) {
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	build := requestFlags(fs, cmd)
	if build == nil {
		return func() (any, bool) { return nil, false }
	}
	typed := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { typed[f.Name] = !before[f.Name] })
	return func() (any, bool) {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || typed[f.Name] })
		return build(), given
	}
}

// requestFlags registers the flags of cmd's request and returns what
// builds it, or nil for a command without them.
func requestFlags(fs *flag.FlagSet, cmd string) func() any {
	switch cmd {
	case "claim":
		var r ClaimRequest
		var kinds string
		var ttl time.Duration
		fs.StringVar(&r.TenantRef, "tenant", "", "tenant_ref")
		fs.StringVar(&r.GraphRef, "graph", "", "graph_ref (default: default)")
		fs.StringVar(&r.OwnerRef, "owner", "", "owner_ref: who claims")
		fs.StringVar(&kinds, "kinds", "", "comma-separated kinds to claim from (default: any)")
		fs.StringVar(&r.WorkItemID, "id", "", "claim this work item only")
		fs.DurationVar(&ttl, "ttl", 0, "how long the claim lasts unless completed (ttl_ms)")
		fs.StringVar(&r.IdempotencyKey, "idempotency-key", "", "a retry with the same key returns the same claim")
		return func() any {
			r.TTLMs = ttl.Milliseconds()
			if kinds != "" {
				r.Kinds = strings.Split(kinds, ",")
			}
			return r
		}
	case "complete":
		var r CompleteRequest
		fs.StringVar(&r.TenantRef, "tenant", "", "tenant_ref")
		fs.StringVar(&r.WorkItemID, "id", "", "work_item_id")
		fs.Int64Var(&r.Attempt, "attempt", 0, "the attempt your claim answered")
		fs.Uint64Var(&r.Fence, "fence", 0, "the fence your claim answered")
		fs.StringVar(&r.Outcome, "outcome", "", "succeeded or failed")
		fs.StringVar(&r.ResultRef, "result", "", "result_ref")
		return func() any { return r }
	case "cancel":
		var r CancelRequest
		fs.StringVar(&r.TenantRef, "tenant", "", "tenant_ref")
		fs.StringVar(&r.WorkItemID, "id", "", "work_item_id")
		fs.StringVar(&r.Reason, "reason", "", "why it is cancelled")
		return func() any { return r }
	}
	return nil
}
