package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/arbiterhq/arbiter/api"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/domain/openapi"
)

var update = flag.Bool("update", false, "rewrite openapi.json from what a node serves")

// served is the document a node of every built-in domain, configured as
// `arbiter serve` is by default, answers at /v1/openapi.json, indented
// (the file is read by people and diffs line by line).
func served(t *testing.T) []byte {
	t.Helper()
	cfg := cluster.DefaultConfig()
	cfg.Domains = builtin.Domains()
	cfg.ID, cfg.DataDir = "n1", t.TempDir()
	cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Bootstrap = true
	node, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = node.Shutdown(ctx) }()
	resp, err := http.Get("http://" + node.APIAddr() + openapi.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20)) // the document is well under 16 MiB
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %.300s", openapi.Path, resp.StatusCode, err, body)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		t.Fatalf("the served document is not JSON: %v", err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// The checked-in document (embedded as api.OpenAPI) is byte for byte
// what a node serves: a route or a request type changed without
// regenerating it fails here.
func TestServedIsCheckedIn(t *testing.T) {
	got := served(t)
	if *update {
		if err := os.WriteFile("openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, api.OpenAPI) {
		t.Fatalf("api/openapi.json differs from what a node serves at %s (%d bytes served, %d checked in, first difference at byte %d): regenerate it with `go generate ./api`",
			openapi.Path, len(got), len(api.OpenAPI), firstDiff(got, api.OpenAPI))
	}
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
