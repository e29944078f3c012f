package main

import (
	"context"
	"errors"
	"strings"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/internal/loadgen"
)

// createGoOp creates a new node per call through the light Go client
// (package client, the public JSON API), client c with a client.Client of
// its own bound to urls[c % len(urls)], as a Go program that only talks
// to a cluster calls it: its generated idempotency key and its failover
// included. The ids are benchNodeID's, so --verify reads them back.
func createGoOp(prefix string, run, valueBytes int, clients []*client.Client) loadgen.Op {
	var value string
	if valueBytes > 0 {
		value = strings.Repeat("v", valueBytes-2) // plus its two quotes
	}
	return func(ctx context.Context, c, seq int) error {
		props := map[string]any{"owner": c}
		if valueBytes > 0 {
			props["value"] = value
		}
		out, err := clients[c].Nodes().Create(ctx, client.CreateRequest{
			NodeID: benchNodeID(prefix, run, c, seq), Labels: []string{"bench"}, Properties: props,
		})
		if err == nil && !out.Created {
			err = errors.New("id was not new")
		}
		return err
	}
}

// goClients is one client.Client per bench client, client c bound to
// urls[c % len(urls)] with the flags' credentials; close them after the run.
func (a *app) goClients(n int, urls []string) ([]*client.Client, error) {
	out := make([]*client.Client, n)
	for c := range out {
		cl, err := a.apiClientAt([]string{urls[c%len(urls)]})
		if err != nil {
			for _, done := range out[:c] {
				done.Close()
			}
			return nil, err
		}
		out[c] = cl
	}
	return out, nil
}
