package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
)

const cliUsage = `usage: arbiter capacity <acquire|renew|release|reclaim|reconcile|status|cells> [--addr URL] [--json BODY]

Sends the request DTO (schema_version "1"; see README) given with --json, or
on standard input, to POST /v1/capacity/<command> and prints the answer.
Example:
  arbiter capacity cells --json '{"schema_version":"1","tenant_ref":"t","cell":{"cell_id":"gpu-1","capacities":{"gpu":8}}}'
`

var cliCommands = []string{"acquire", "renew", "release", "reclaim", "reconcile", "status", "cells"}

func cli() *domain.CLI {
	return &domain.CLI{Name: "capacity", Summary: "acquire, renew, release and inspect capacity leases", Run: runCLI}
}

func runCLI(env domain.CLIEnv, args []string) error {
	if len(args) == 0 || !slices.Contains(cliCommands, args[0]) {
		fmt.Fprint(env.Stderr, cliUsage)
		return errors.New("missing or unknown capacity command")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("capacity "+cmd, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	body := fs.String("json", "", "request DTO (default: read standard input)")
	connect := env.Connect(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, err := connect()
	if err != nil {
		return err
	}
	raw := []byte(*body)
	if *body == "" {
		if raw, err = io.ReadAll(io.LimitReader(env.Stdin, domain.MaxBodyBytes+1)); err != nil {
			return err
		}
	}
	if !json.Valid(raw) {
		return errors.New("the request is not JSON")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out json.RawMessage
	callErr := conn.CallJSON(ctx, "POST", "/v1/capacity/"+cmd, json.RawMessage(raw), &out)
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
