package cluster_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// A node with a mount of another protocol (serve --mcp's /mcp) still
// describes its API: the mount is served, and left out of the document,
// which describes the JSON API only.
func TestOpenAPIWithAMount(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(_ int, cfg *cluster.Config) {
		cfg.Mounts = map[string]func(http.Handler) http.Handler{"/mcp": func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
		}}
	}})
	c.WaitLeader(10 * time.Second)
	base := apiBase(c, 0)
	if r := apiGet(t, base+"/mcp"); r.status != http.StatusTeapot {
		t.Fatalf("/mcp: %d %s", r.status, r.body)
	}
	r := apiGet(t, base+"/v1/openapi.json")
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &doc) != nil || doc.OpenAPI != "3.1.0" || len(doc.Paths) < 10 {
		t.Fatalf("the document with a mount: %d %.300s", r.status, r.body)
	}
	for path := range doc.Paths {
		if len(path) < 2 || path[0] != '/' || path == "/mcp" {
			t.Errorf("the document lists path %q", path)
		}
	}
}
