package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

// A program that is only a client: it knows the cluster's addresses and
// a token, and links no server code. (exampleCluster is test plumbing:
// the addresses of the cluster the package's tests run.)
func ExampleNew() {
	addrs, token := exampleCluster()

	c, err := client.New(addrs, client.WithToken(token), client.WithTimeout(5*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()

	// First writer wins: exactly one caller creates the lock.
	lock := client.CreateRequest{NodeID: "example/lock", Properties: map[string]any{"owner": "ci-7"}, IdempotencyKey: "ci-7/1"}
	res, err := c.Nodes().Create(ctx, lock)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", res.Created, "owner:", string(res.Node.Properties["owner"]))

	// A retry with the same key (after an unknown outcome) replays it.
	again, _ := c.Nodes().Create(ctx, lock)
	fmt.Println("replayed:", again.Replayed)

	// Refusals are the node's error codes.
	_, err = c.Nodes().Get(ctx, "example/missing", client.Linearizable)
	fmt.Println("not found:", errors.Is(err, errs.NotFound))
	// Output:
	// created: true owner: "ci-7"
	// replayed: true
	// not found: true
}

func exampleCluster() ([]string, string) { return shared.URLs(), tokens["ops"] }
