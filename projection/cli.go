package projection

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
)

const cliUsage = `usage: arbiter projection <command> [--addr URL] [flags]

  target   --json BODY   POST /v1/projection/targets {attested, channels}
  submit   --json BODY   POST /v1/projection/channels/submit {target_id, channel, source_watermark, envelope}
  acquire  --json BODY   POST /v1/projection/leases/acquire {target_id, holder_instance_digest}
           or --target ID --holder DIGEST
  publish  --json BODY   POST /v1/projection/publish {target_id, token, fencing_epoch}
           or --target ID --lease-token T --epoch N
  release  --json BODY   POST /v1/projection/leases/release {target_id, token, fencing_epoch}
           or --target ID --lease-token T --epoch N
  config   --json BODY   PUT /v1/projection/config {lease_ttl_ms} (admin)
           or --lease-ttl 30s
  show     --target ID [--current]
                         GET /v1/projection/targets/ID (or its current publication)

BODY is the request as JSON, or read from standard input when --json is
not given. The answer is printed as JSON; an error answer too, with a
non-zero exit status. publish also exits non-zero when the answering node
did not write its current.json ("file": "failed" or "pending").
Examples:
  arbiter projection config --lease-ttl 30s
  arbiter projection config --json '{"lease_ttl_ms": 30000}'
`

// cliRoutes are the commands that send a JSON body.
var cliRoutes = map[string][2]string{
	"target":  {http.MethodPost, "/v1/projection/targets"},
	"submit":  {http.MethodPost, "/v1/projection/channels/submit"},
	"acquire": {http.MethodPost, "/v1/projection/leases/acquire"},
	"publish": {http.MethodPost, "/v1/projection/publish"},
	"release": {http.MethodPost, "/v1/projection/leases/release"},
	"config":  {http.MethodPut, "/v1/projection/config"},
}

func cli() *domain.CLI {
	return &domain.CLI{Name: "projection", Summary: "register targets, submit envelopes, acquire, publish and release projection leases", Run: runCLI}
}

func runCLI(env domain.CLIEnv, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, cliUsage)
		return errors.New("missing projection command")
	}
	cmd, args := args[0], args[1:]
	route, sends := cliRoutes[cmd]
	if !sends && cmd != "show" {
		fmt.Fprint(env.Stderr, cliUsage)
		return fmt.Errorf("unknown projection command %q", cmd)
	}
	fs := flag.NewFlagSet("projection "+cmd, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	body := fs.String("json", "", "request as JSON (default: read standard input)")
	target := fs.String("target", "", "target id (show, acquire, publish, release)")
	cur := fs.Bool("current", false, "show the target's current publication (show)")
	holder := fs.String("holder", "", "holder_instance_digest (acquire)")
	token := fs.String("lease-token", "", "the lease token acquire answered (publish, release)")
	epoch := fs.Uint64("epoch", 0, "the fencing_epoch acquire answered (publish, release)")
	leaseTTL := fs.Duration("lease-ttl", 0, "lease_ttl_ms (config)")
	// typed builds the request of acquire, publish, release or config from
	// its flags.
	typed := map[string]func() any{
		"acquire": func() any { return AcquireRequest{TargetID: *target, HolderInstanceDigest: *holder} },
		"publish": func() any { return FenceRequest{TargetID: *target, Token: *token, FencingEpoch: *epoch} },
		"release": func() any { return FenceRequest{TargetID: *target, Token: *token, FencingEpoch: *epoch} },
		"config":  func() any { return ConfigRequest{LeaseTTLMs: leaseTTL.Milliseconds()} },
	}
	typedFlags := map[string]bool{"target": true, "holder": true, "lease-token": true, "epoch": true, "lease-ttl": true}
	connect := env.Connect(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	flagged := false
	fs.Visit(func(f *flag.Flag) { flagged = flagged || typedFlags[f.Name] })
	var req any
	switch build := typed[cmd]; {
	case sends && flagged && *body != "":
		return errors.New("give the request with --json or with flags, not both")
	case sends && flagged && build == nil:
		return fmt.Errorf("projection %s takes its request with --json only", cmd)
	case sends && flagged:
		req = build()
	case sends:
		raw := []byte(*body)
		if *body == "" {
			var err error
			if raw, err = io.ReadAll(io.LimitReader(env.Stdin, domain.MaxBodyBytes+1)); err != nil {
				return err
			}
		}
		if !json.Valid(raw) {
			return errors.New("the request is not JSON")
		}
		req = json.RawMessage(raw)
	default:
		if err := CheckTargetID(*target); err != nil {
			return fmt.Errorf("--target: %w", err)
		}
		route = [2]string{http.MethodGet, "/v1/projection/targets/" + *target}
		if *cur {
			route[1] += "/current"
		}
	}
	conn, err := connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out json.RawMessage
	callErr := conn.CallJSON(ctx, route[0], route[1], req, &out)
	var answer any = out
	if callErr != nil {
		answer = map[string]*errs.Error{"error": errs.From(callErr)}
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(answer); err != nil {
		return err
	}
	if callErr == nil && cmd == "publish" {
		// No success without the file: a publication the answering
		// node did not write exits non-zero, as Holder fails.
		var p PublishResult
		if json.Unmarshal(out, &p) == nil && (p.File == FileFailed || p.File == FilePending) {
			return notWritten(&p)
		}
	}
	return callErr
}
