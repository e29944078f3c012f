package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/nodes"
)

// A single-node cluster embedded in a program. Other nodes would set
// cfg.Join to this node's API URL instead of cfg.Bootstrap.
func ExampleNode() {
	dir, _ := os.MkdirTemp("", "arbiter-example-")
	defer os.RemoveAll(dir)

	cfg := cluster.DefaultConfig()

	cfg.Domains = builtin.Domains()
	cfg.ID, cfg.DataDir = "n1", dir
	cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Bootstrap = true
	node, err := cluster.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer node.Shutdown(ctx)

	// Proposals wait for a leader (bounded by ApplyTimeout).
	nc := nodes.On(node)
	res, err := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "job-1", IdempotencyKey: "req-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	again, _ := nc.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "job-1", IdempotencyKey: "req-1"})
	fmt.Println("created:", res.Created, "retry replayed:", again.Replayed, "retry created:", again.Created)

	// The same calls over HTTP, from anywhere (package client).
	c, err := client.New([]string{node.APIAddr()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	got, err := c.Nodes().Get(ctx, "job-1", client.Linearizable)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("read back:", got.NodeID, "version", got.Version)
	// Output:
	// created: true retry replayed: true retry created: true
	// read back: job-1 version 1
}

// A backup taken from one cluster and restored into another, as a
// migration or a disaster recovery would.
func ExampleNode_Restore() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "arbiter-example-")
	defer os.RemoveAll(dir)
	start := func(id string) *cluster.Node {
		cfg := cluster.DefaultConfig()
		cfg.Domains = builtin.Domains()
		cfg.ID, cfg.DataDir, cfg.Bootstrap = id, filepath.Join(dir, id), true
		cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
		node, err := cluster.New(cfg)
		if err == nil {
			err = node.Start(ctx)
		}
		if err != nil {
			panic(err)
		}
		return node
	}
	old, fresh := start("old"), start("new")
	defer old.Shutdown(ctx)
	defer fresh.Shutdown(ctx)
	if _, err := nodes.On(old).CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: "job-1"}); err != nil {
		fmt.Println(err)
		return
	}

	var backup bytes.Buffer
	if err := old.Backup(ctx, &backup); err != nil {
		fmt.Println(err)
		return
	}
	res, err := fresh.Restore(ctx, &backup)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := nodes.On(fresh).Get(ctx, "job-1", fsm.Linearizable)
	fmt.Println("restored", res.Backup.Rows > 0, "read back:", got.NodeID, err)
	// Output:
	// restored true read back: job-1 <nil>
}
