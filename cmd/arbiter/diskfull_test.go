//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/tinydisk"
)

// A disk that fills up. One `arbiter serve` process keeps its data on a
// small tmpfs; once the test fills the rest of it, the node must fail
// closed: no write is acknowledged that is not durable (a write that
// cannot be stored answers 503, or nothing before its deadline), the
// process stays up, and nothing it acknowledged before is lost. When
// space returns it takes writes again without a restart, and a restart
// then finds every acknowledged write: the log was not corrupted.
//
// It runs on each log store. The WAL preallocates every segment when it
// makes it, so its disk fills at a segment rotation: the WAL case uses
// 64 KiB segments, which rotate within the test's writes (its 64 MiB
// default would not fit on the 8 MiB disk at all, and a node that cannot
// make its first segment refuses to start, saying so).
//
// Mounting needs root (CAP_SYS_ADMIN); elsewhere the test is skipped,
// saying so.
func TestDiskFullFailsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	// The WAL writes into space it preallocated, so its disk fills at a
	// segment rotation: small segments make that happen within the test.
	t.Run("wal", func(t *testing.T) { diskFullFailsClosed(t, "--log-store", "wal", "--wal-segment-bytes", "65536") })
	t.Run("bolt", func(t *testing.T) { diskFullFailsClosed(t, "--log-store", "bolt") })
}

func diskFullFailsClosed(t *testing.T, storeArgs ...string) {
	disk := tinydisk.Mount(t, "8m")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := &e2eCluster{t: t, bin: e2eBuildArbiter(t), c: newE2EAPIClient()}
	ports := e2eFreePorts(t, 2)
	n := &e2eNode{id: "n1", httpAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]), dataDir: filepath.Join(disk, "data"), logDir: t.TempDir()}
	n.args = []string{"--id", n.id, "--data-dir", n.dataDir, "--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--http-addr", n.httpAddr, "--bootstrap"}
	n.args = append(n.args, storeArgs...)
	cl.nodes = []*e2eNode{n}
	t.Cleanup(cl.dumpLogsOnFailure)
	t.Cleanup(cl.stopAll)
	n.start(t, cl.bin)
	cl.waitReady(ctx, n, 20*time.Second)

	big := strings.Repeat("x", 2000)
	acked := map[string]bool{}
	create := func(id string, timeout time.Duration) error {
		wctx, wcancel := context.WithTimeout(ctx, timeout)
		defer wcancel()
		var res e2eCreateReply
		err := cl.c.call(wctx, http.MethodPost, n.url()+"/v1/nodes/create", e2eCreateReq{NodeID: id, Properties: map[string]any{"pad": big}}, &res)
		if err == nil {
			if !res.Created {
				t.Errorf("create %s: created=false", id)
			}
			acked[id] = true
		}
		return err
	}
	for i := range 20 {
		if err := create(fmt.Sprintf("before-%d", i), 10*time.Second); err != nil {
			t.Fatalf("write before the disk fills: %v", err)
		}
	}

	filler := filepath.Join(disk, "filler")
	tinydisk.Fill(t, filler, 0)
	refused := 0
	for i := 0; i < 40 && refused < 5; i++ {
		err := create(fmt.Sprintf("full-%d", i), 3*time.Second)
		var apiErr *e2eAPIError
		switch {
		case err == nil: // fitted in space the log store already had
		case errors.As(err, &apiErr) && apiErr.Status != http.StatusServiceUnavailable:
			t.Errorf("write on a full disk: %v, want 503 or no answer", err)
		default:
			refused++
		}
		if !n.running() {
			t.Fatalf("the node exited on a full disk: %v", n.proc.err)
		}
	}
	if refused < 5 {
		t.Fatalf("only %d of 40 writes failed on a full disk: the disk never filled", refused)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	cl.eventually(ctx, 30*time.Second, "a write once space returned", func() (bool, string) {
		err := create(fmt.Sprintf("after-%d", time.Now().UnixNano()), 5*time.Second)
		return err == nil, fmt.Sprint(err)
	})

	n.signal(t, syscall.SIGKILL)
	n.waitExit(5 * time.Second)
	n.start(t, cl.bin)
	cl.waitReady(ctx, n, 30*time.Second)
	for id := range acked {
		if _, err := cl.c.get(ctx, n, id, false); err != nil {
			t.Errorf("acknowledged %s lost: %v", id, err)
		}
	}
	t.Logf("%d acknowledged writes, all read back after the restart; %d writes failed on the full disk", len(acked), refused)
}
