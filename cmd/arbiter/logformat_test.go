package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `arbiter serve --log-format json` logs one JSON object per line, raft's
// lines included (with hclog's formatted values as values); an unknown
// format is refused before anything starts.
func TestServeLogFormatJSON(t *testing.T) {
	if r := runCLI(t, nil, "", "serve", "--log-format", "xml"); r.status == 0 || !strings.Contains(r.stderr, "--log-format") {
		t.Fatalf("serve --log-format xml: %+v", r)
	}
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := e2eBuildArbiter(t)
	ports := e2eFreePorts(t, 2)
	root := t.TempDir()
	n := &e2eNode{id: "n1", httpAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]), dataDir: filepath.Join(root, "data"), logDir: root}
	n.args = []string{"--id", n.id, "--data-dir", n.dataDir, "--raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--http-addr", n.httpAddr, "--log-format", "json", "--bootstrap"}
	n.start(t, bin)
	defer func() {
		if n.running() {
			_ = n.proc.cmd.Process.Kill()
			n.waitExit(5 * time.Second)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newE2EAPIClient()
	for {
		if err := c.call(ctx, http.MethodGet, n.url()+"/readyz", nil, nil); err == nil {
			break
		}
		if !n.running() || ctx.Err() != nil {
			t.Fatalf("the node did not become ready:\n%s", n.currentLog(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.signal(t, syscall.SIGTERM)
	if n.waitExit(20*time.Second) == nil {
		t.Fatal("the node did not stop on SIGTERM")
	}
	raw, err := os.ReadFile(n.logs[0])
	if err != nil {
		t.Fatal(err)
	}
	var raftLines int
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %q", i+1, line)
		}
		if rec["level"] == nil || rec["msg"] == nil || rec["time"] == nil {
			t.Errorf("line %d lacks level, msg or time: %q", i+1, line)
		}
		if rec["component"] == "raft" {
			raftLines++
		}
		if strings.Contains(line, "%+v") {
			t.Errorf("line %d logs a format: %q", i+1, line)
		}
	}
	if raftLines == 0 {
		t.Errorf("no raft line in the log:\n%s", raw)
	}
}
