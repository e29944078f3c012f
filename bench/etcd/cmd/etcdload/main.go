// Command etcdload measures etcd's transactional create-if-absent
// (Txn: If CreateRevision(key) == 0 Then Put Else Get) with N concurrent
// clients, each with its own client bound to one endpoint in turn, through
// the same load generator as `arbiter bench`.
//
// By default the clients speak gRPC (clientv3), etcd's fastest path. With
// --http they post JSON to etcd's gateway (POST /v3/kv/txn), each on its
// own keep-alive connection: what an independent HTTP client sends, as
// `arbiter bench --op create-json` does to Arbiter.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
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
	overHTTP := flag.Bool("http", false, "post JSON to etcd's HTTP gateway instead of using gRPC")
	verify := flag.Bool("verify", false, "after each run, read back every acknowledged create (linearizably, not measured) and exit 1 if one is missing")
	flag.Parse()
	eps := strings.Split(*endpoints, ",")
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	via := "gRPC"
	if *overHTTP {
		via = "HTTP/JSON"
	}
	fmt.Printf("etcd txn create-if-absent of distinct keys over %s via %d endpoint(s), %v per run after %v warmup\n", via, len(eps), *duration, *warmup)
	for run, s := range strings.Split(*clientList, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad client count %q\n", s)
			os.Exit(2)
		}
		if *overHTTP {
			res := loadgen.Run(context.Background(), n, *warmup, *duration, httpTxn(eps, n, prefix, run))
			report(res)
			if *verify {
				verifyCreates(eps, prefix, run, res)
			}
			continue
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
			key := benchKey(prefix, run, c, seq)
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
		report(res)
		for _, cli := range clients {
			cli.Close()
		}
		if *verify {
			verifyCreates(eps, prefix, run, res)
		}
	}
}

// benchKey is the key call seq of client c creates in run run.
func benchKey(prefix string, run, c, seq int) string {
	return fmt.Sprintf("%s-r%d-c%d-%d", prefix, run, c, seq)
}

// verifyCreates reads back every key res says a call created, with a
// linearizable Get over gRPC whichever way the run wrote, and exits 1
// when one is missing: the same check as arbiter bench --verify.
func verifyCreates(eps []string, prefix string, run int, res loadgen.Result) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cli.Close()
	v := loadgen.Verify(context.Background(), res, 32, func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		key := benchKey(prefix, run, c, seq)
		resp, err := cli.Get(ctx, key)
		if err == nil && resp.Count != 1 {
			err = fmt.Errorf("key %s: not found", key)
		}
		return err
	})
	fmt.Printf("  %v\n", v)
	if v.Missing > 0 {
		os.Exit(1)
	}
}

func report(res loadgen.Result) {
	fmt.Println(res)
	if line := res.ClientCPULine(); line != "" {
		fmt.Println(line)
	}
	if res.FirstErr != nil {
		fmt.Printf("  first error: %v\n", res.FirstErr)
	}
}

// httpTxn is the create-if-absent transaction as JSON to etcd's gateway,
// client c on its own keep-alive connection to eps[c % len(eps)]. Keys and
// values are base64, as the gateway's protobuf JSON mapping wants bytes.
func httpTxn(eps []string, clients int, prefix string, run int) loadgen.Op {
	hcs := make([]*http.Client, clients)
	for c := range hcs {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 1
		hcs[c] = &http.Client{Transport: t}
	}
	b64 := base64.StdEncoding.EncodeToString
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		key := b64([]byte(benchKey(prefix, run, c, seq)))
		body := fmt.Sprintf(`{"compare":[{"key":%q,"target":"CREATE","result":"EQUAL","create_revision":"0"}],`+
			`"success":[{"request_put":{"key":%q,"value":%q}}],"failure":[{"request_range":{"key":%q}}]}`,
			key, key, b64([]byte(fmt.Sprintf(`{"owner":%d}`, c))), key)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+eps[c%len(eps)]+"/v3/kv/txn", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hcs[c].Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
		}
		var reply struct {
			Succeeded bool `json:"succeeded"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil {
			return fmt.Errorf("undecodable reply %q: %v", raw, err)
		}
		if !reply.Succeeded {
			return errors.New("key was not new")
		}
		return nil
	}
}
