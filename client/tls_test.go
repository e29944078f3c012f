package client_test

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

// TestTLS: WithCAFile trusts a node's certificate authority, WithTLSConfig
// takes a whole configuration, and without either an unknown authority
// is refused (no node answered); plain HTTP to it is told to use https.
func TestTLS(t *testing.T) {
	ctx := ctxOf(t)
	node := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tls-token" || r.Header.Get("Request-Timeout") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"unauthorized","message":"no"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready","leader_id":"n1"}`))
	}))
	t.Cleanup(node.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	must(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: node.Certificate().Raw}), 0o600))

	c, err := client.New([]string{node.URL}, client.WithCAFile(ca), client.WithToken("tls-token"))
	must(t, err)
	ready, err := c.Cluster().Ready(ctx)
	must(t, err)
	if ready.LeaderID != "n1" {
		t.Fatalf("ready: %+v", ready)
	}
	c, err = client.New([]string{node.URL}, client.WithTLSConfig(node.Client().Transport.(*http.Transport).TLSClientConfig))
	must(t, err)
	_, err = c.Cluster().Ready(ctx)
	wantCode(t, err, errs.CodeUnauthorized) // reached it: the token is what is missing

	c, err = client.New([]string{node.URL}, client.WithToken("tls-token"), client.WithTimeout(300*time.Millisecond))
	must(t, err)
	_, err = c.Cluster().Ready(ctx)
	wantCode(t, err, errs.CodeUnavailable)
	// Plain HTTP to the TLS node: the answer says to use https.
	c, err = client.New([]string{"http://" + strings.TrimPrefix(node.URL, "https://")})
	must(t, err)
	_, err = c.Cluster().Ready(ctx)
	wantCode(t, err, errs.CodeUnavailable)
	if !strings.Contains(err.Error(), "https://") {
		t.Fatalf("plain HTTP to a TLS node: %v", err)
	}
	if _, err := client.New([]string{node.URL}, client.WithCAFile(filepath.Join(t.TempDir(), "none.pem"))); err == nil {
		t.Fatal("a missing CA file is no error")
	}
}
