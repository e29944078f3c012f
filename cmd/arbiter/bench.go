package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/loadgen"
)

// bench measures create-if-absent of distinct node ids against a running
// cluster, through the same client a Go program would use (cluster.Remote),
// with each client bound to one of the given nodes in turn.
func bench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	addrs := fs.String("addrs", "http://127.0.0.1:8000", "comma-separated API URLs of the nodes")
	clientList := fs.String("clients", "1,16,64", "comma-separated client counts, one run each")
	duration := fs.Duration("duration", 10*time.Second, "measured time per run")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured time before each run")
	prefix := fs.String("prefix", fmt.Sprintf("bench-%d", time.Now().UnixNano()), "node id prefix (ids must be new)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var counts []int
	for _, s := range strings.Split(*clientList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 4096 {
			return fmt.Errorf("--clients: %q is not a client count between 1 and 4096", s)
		}
		counts = append(counts, n)
	}
	urls := strings.Split(*addrs, ",")
	fmt.Printf("create-if-absent of distinct ids via %d node(s), %v per run after %v warmup\n", len(urls), *duration, *warmup)
	for run, clients := range counts {
		nodes := make([]*fsm.Nodes, clients)
		for c := range nodes {
			r := cluster.NewRemote(urls[c%len(urls)])
			nodes[c] = fsm.NewNodes(r, r)
		}
		res := loadgen.Run(context.Background(), clients, *warmup, *duration, func(ctx context.Context, c, seq int) error {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			out, err := nodes[c].CreateIfAbsent(ctx, fsm.CreateNodeRequest{
				NodeID: fmt.Sprintf("%s-r%d-c%d-%d", *prefix, run, c, seq), Labels: []string{"bench"},
				Properties: map[string]any{"owner": c},
			})
			if err == nil && !out.Created {
				err = fmt.Errorf("id was not new")
			}
			return err
		})
		fmt.Println(res)
		if res.FirstErr != nil {
			fmt.Printf("  first error: %v\n", res.FirstErr)
		}
	}
	return nil
}
