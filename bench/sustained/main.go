package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/nodes"
)

func main() {
	bin := flag.String("bin", "", "the arbiter binary (go build -o /tmp/arbiter ./cmd/arbiter)")
	duration := flag.Duration("duration", 30*time.Minute, "how long to write")
	clients := flag.Int("clients", 32, "concurrent writers")
	keys := flag.Int("keys", 1000, "nodes overwritten in turn")
	every := flag.Duration("sample", 10*time.Second, "sampling interval")
	out := flag.String("out", "", "directory for samples.csv and sustained.svg (created)")
	basePort := flag.Int("port", 29100, "first of the six loopback ports used")
	flag.Parse()
	if *bin == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "sustained: -bin and -out are required")
		os.Exit(2)
	}
	if err := run(*bin, *out, *duration, *clients, *keys, *every, *basePort); err != nil {
		fmt.Fprintln(os.Stderr, "sustained:", err)
		os.Exit(1)
	}
}

func run(bin, out string, duration time.Duration, clients, keys int, every time.Duration, basePort int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	procs, err := startCluster(bin, out, basePort)
	defer stopCluster(procs)
	if err != nil {
		return err
	}
	addrs := make([]string, len(procs))
	for i, p := range procs {
		addrs[i] = p.api
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+5*time.Minute)
	defer cancel()
	if err := waitVoters(ctx, addrs[0], len(procs)); err != nil {
		return err
	}
	if err := createKeys(ctx, addrs, keys); err != nil {
		return err
	}

	var ops, failures atomic.Int64
	loadCtx, stopLoad := context.WithTimeout(ctx, duration)
	defer stopLoad()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			write(loadCtx, addrs, c, keys, &ops, &failures)
		}()
	}
	samples, err := sample(loadCtx, procs, addrs[0], every, &ops, filepath.Join(out, "samples.csv"))
	wg.Wait()
	if err != nil {
		return err
	}
	if err := plot(samples, filepath.Join(out, "sustained.svg")); err != nil {
		return err
	}
	fmt.Print(summary(samples, ops.Load(), failures.Load(), duration, clients, keys))
	return nil
}

// createKeys creates the nodes the writers overwrite.
func createKeys(ctx context.Context, addrs []string, keys int) error {
	r := rawremote.New(addrs...)
	c := nodes.On(r)
	for k := range keys {
		if _, err := c.CreateIfAbsent(ctx, nodes.CreateRequest{NodeID: key(k), Properties: map[string]any{"v": 0}}); err != nil {
			return fmt.Errorf("creating %s: %w", key(k), err)
		}
	}
	return nil
}

func key(k int) string { return fmt.Sprintf("sustained-%d", k) }

// write overwrites key after key with a unique idempotency key each time
// (so every write adds a ledger row), through its own first node.
func write(ctx context.Context, addrs []string, c, keys int, ops, failures *atomic.Int64) {
	rotated := append(append([]string{}, addrs[c%len(addrs):]...), addrs[:c%len(addrs)]...)
	r := rawremote.New(rotated...)
	client := nodes.On(r)
	for seq := 0; ctx.Err() == nil; seq++ {
		_, err := client.CompareAndSet(ctx, nodes.CASRequest{NodeID: key((c*7919 + seq) % keys),
			Updates: map[string]any{"v": seq, "writer": c}, IdempotencyKey: fmt.Sprintf("w%d-%d", c, seq)})
		switch {
		case err == nil:
			ops.Add(1)
		case ctx.Err() == nil:
			failures.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitVoters waits until the first node reports n voters and a leader.
func waitVoters(ctx context.Context, addr string, n int) error {
	r := rawremote.New(addr)
	for {
		var st cluster.Status
		err := r.CallJSON(ctx, "GET", "/v1/cluster/status", nil, &st)
		if err == nil && st.LeaderID != "" {
			voters := 0
			for _, m := range st.Members {
				if m.Voter {
					voters++
				}
			}
			if voters == n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(errors.New("the cluster never had three voters"), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// proc is one serve process.
type proc struct {
	id, api string
	cmd     *exec.Cmd
}

func startCluster(bin, out string, basePort int) ([]*proc, error) {
	var procs []*proc
	for i := range 3 {
		p := &proc{id: fmt.Sprintf("s%d", i+1), api: fmt.Sprintf("http://127.0.0.1:%d", basePort+2*i+1)}
		args := []string{"serve", "--id", p.id, "--data-dir", filepath.Join(out, p.id),
			"--raft-addr", fmt.Sprintf("127.0.0.1:%d", basePort+2*i), "--http-addr", p.api[len("http://"):], "--log-level", "warn"}
		if i == 0 {
			args = append(args, "--bootstrap")
		} else {
			args = append(args, "--join", procs[0].api)
		}
		logf, err := os.Create(filepath.Join(out, p.id+".log"))
		if err != nil {
			return procs, err
		}
		p.cmd = exec.Command(bin, args...)
		p.cmd.Stdout, p.cmd.Stderr = logf, logf
		if err := p.cmd.Start(); err != nil {
			return procs, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

func stopCluster(procs []*proc) {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range procs {
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	}
}
