package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

const capacityUsage = `usage: arbiter capacity <acquire|renew|release|reclaim|reconcile|status|cells> [--addr URL] [--json BODY]

Sends the request DTO (schema_version "1"; see README) given with --json, or
on standard input, to POST /v1/capacity/<command> and prints the answer.
Example:
  arbiter capacity cells --json '{"schema_version":"1","tenant_ref":"t","cell":{"cell_id":"gpu-1","capacities":{"gpu":8}}}'
`

var capacityCommands = map[string]bool{"acquire": true, "renew": true, "release": true, "reclaim": true, "reconcile": true, "status": true, "cells": true}

func capacityCmd(args []string) error {
	if len(args) == 0 || !capacityCommands[args[0]] {
		fmt.Fprint(os.Stderr, capacityUsage)
		return errors.New("missing or unknown capacity command")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("capacity "+cmd, flag.ContinueOnError)
	addr := fs.String("addr", "http://127.0.0.1:8000", "API URL of any node")
	body := fs.String("json", "", "request DTO (default: read standard input)")
	cf := addClientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	hc, err := cf.httpClient()
	if err != nil {
		return err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	raw := []byte(*body)
	if *body == "" {
		if raw, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*addr, "/")+"/v1/capacity/"+cmd, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if *cf.token != "" {
		req.Header.Set("Authorization", "Bearer "+*cf.token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = pretty.Bytes()
	}
	fmt.Println(strings.TrimSpace(string(out)))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}
