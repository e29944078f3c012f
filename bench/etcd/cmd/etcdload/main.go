// Command etcdload measures etcd's transactional create-if-absent
// (Txn: If CreateRevision(key) == 0 Then Put Else Get) with N concurrent
// clients, each with its own client bound to one endpoint in turn, through
// the same load generator as `arbiter bench`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/internal/loadgen"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "comma-separated etcd client endpoints")
	clientList := flag.String("clients", "1,16,64", "comma-separated client counts")
	duration := flag.Duration("duration", 10*time.Second, "measured time per run")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured time before each run")
	flag.Parse()
	eps := strings.Split(*endpoints, ",")
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	fmt.Printf("etcd txn create-if-absent of distinct keys via %d endpoint(s), %v per run after %v warmup\n", len(eps), *duration, *warmup)
	for run, s := range strings.Split(*clientList, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad client count %q\n", s)
			os.Exit(2)
		}
		clients := make([]*clientv3.Client, n)
		for c := range clients {
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[c%len(eps)]}, DialTimeout: 5 * time.Second})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			clients[c] = cli
		}
		res := loadgen.Run(context.Background(), n, *warmup, *duration, func(ctx context.Context, c, seq int) error {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			key := fmt.Sprintf("%s-r%d-c%d-%d", prefix, run, c, seq)
			resp, err := clients[c].Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, fmt.Sprintf(`{"owner":%d}`, c))).
				Else(clientv3.OpGet(key)).
				Commit()
			if err == nil && !resp.Succeeded {
				err = errors.New("key was not new")
			}
			return err
		})
		fmt.Println(res)
		if res.FirstErr != nil {
			fmt.Printf("  first error: %v\n", res.FirstErr)
		}
		for _, cli := range clients {
			cli.Close()
		}
	}
}
