package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/identity"
)

// mustCLI runs the command line and fails the test unless it exits 0.
func mustCLI(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	r := runCLI(t, env, "", args...)
	if r.status != 0 {
		t.Fatalf("arbiter %s: status %d\n%s%s", strings.Join(args, " "), r.status, r.stdout, r.stderr)
	}
	return r.stdout
}

// What arbiter cert makes starts a TLS node exactly as serve's
// --tls-cert, --tls-key, --tls-peer-ca and --tls-client-ca load it, and
// the client certificate names its principal: whoami through the CLI
// answers that principal for the certificate, and another for a bearer
// token; capacity acquire then fills the token principal's owner digest
// from whoami.
func TestCertsStartATLSNodeAndWhoamiNamesPrincipals(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	mustCLI(t, nil, "cert", "ca", "--dir", certs)
	mustCLI(t, nil, "cert", "node", "--id", "n1", "--dir", certs)
	var client certResult
	if err := json.Unmarshal([]byte(mustCLI(t, nil, "cert", "client", "--principal", "ops", "--dir", certs, "-o", "json")), &client); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"peer-ca.pem", "peer-ca-key.pem", "client-ca.pem", "client-ca-key.pem", "n1.pem", "n1-key.pem", "ops.pem", "ops-key.pem"} {
		if st, err := os.Stat(filepath.Join(certs, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, st, err)
		}
	}
	if r := runCLI(t, nil, "", "cert", "ca", "--dir", certs); r.status == 0 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("cert ca over existing files: %+v", r)
	}
	var token struct{ Token, TokenSHA256 string }
	raw := mustCLI(t, nil, "principal", "new-token", "-o", "json")
	if err := json.Unmarshal([]byte(strings.ReplaceAll(raw, "token_sha256", "tokensha256")), &token); err != nil || token.Token == "" {
		t.Fatalf("new-token: %v %s", err, raw)
	}

	// The principals file, as an operator writes it from what was printed.
	principals := []identity.PrincipalConfig{*client.Principal,
		{ID: "agent-7", Tenants: []string{"team-a"}, Roles: []string{"member"}, TokenSHA256: []string{token.TokenSHA256}}}
	principals[0].Tenants, principals[0].Roles = []string{"*"}, []string{"admin"}
	pf := filepath.Join(dir, "principals.json")
	body, _ := json.Marshal(principals)
	if err := os.WriteFile(pf, body, 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := identity.Load(pf)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := cluster.LoadTLS(filepath.Join(certs, "n1.pem"), filepath.Join(certs, "n1-key.pem"),
		filepath.Join(certs, "peer-ca.pem"), filepath.Join(certs, "client-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.DefaultConfig()
	cfg.ID, cfg.DataDir, cfg.RaftAddr, cfg.HTTPAddr = "n1", filepath.Join(dir, "n1"), "127.0.0.1:0", "127.0.0.1:0"
	cfg.Bootstrap, cfg.NoSyncUnsafe, cfg.TLS, cfg.Principals, cfg.Domains = true, true, tlsCfg, reg, builtin.Domains()
	node, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer node.Shutdown(context.Background())
	url := "https://" + node.APIAddr()

	// The certificate, from the environment.
	certEnv := map[string]string{"ARBITER_ADDR": url, "ARBITER_CACERT": filepath.Join(certs, "peer-ca.pem"),
		"ARBITER_CERT": filepath.Join(certs, "ops.pem"), "ARBITER_KEY": filepath.Join(certs, "ops-key.pem")}
	mustCLI(t, certEnv, "endpoint", "health", "--wait=20s")
	var who cluster.Whoami
	if err := json.Unmarshal([]byte(mustCLI(t, certEnv, "whoami", "-o", "json")), &who); err != nil {
		t.Fatal(err)
	}
	if who.Principal != "ops" || who.Credential != "client_certificate" || who.OwnerDigest != capacity.OwnerDigest("ops") {
		t.Errorf("whoami with the client certificate: %+v", who)
	}
	// The token, from a flag; the CA from a flag.
	tokenArgs := []string{"--addr", url, "--ca", filepath.Join(certs, "peer-ca.pem"), "--token", token.Token}
	if err := json.Unmarshal([]byte(mustCLI(t, nil, append([]string{"whoami", "-o", "json"}, tokenArgs...)...)), &who); err != nil {
		t.Fatal(err)
	}
	if who.Principal != "agent-7" || who.Credential != "bearer_token" || who.OwnerDigest != capacity.OwnerDigest("agent-7") ||
		strings.Join(who.Tenants, ",") != "team-a" {
		t.Errorf("whoami with the token: %+v", who)
	}
	// No credential: 401; plain http to a TLS node: said so.
	if r := runCLI(t, nil, "", "whoami", "--addr", url, "--ca", filepath.Join(certs, "peer-ca.pem")); r.status != exitError || !strings.Contains(r.stderr, "unauthorized") {
		t.Errorf("whoami without a credential: %+v", r)
	}
	if r := runCLI(t, nil, "", "whoami", "--addr", "http://"+node.APIAddr()); r.status != exitError || !strings.Contains(strings.ToLower(r.stderr), "https") {
		t.Errorf("whoami over http to a TLS node: %+v", r)
	}

	// The admin (certificate) makes a cell; the token's principal acquires
	// without naming an owner: the CLI asks whoami for its digest.
	mustCLI(t, certEnv, "capacity", "cells", "--tenant", "team-a", "--cell", "c1", "--capacity", "slot=4")
	var res capacity.AcquireResult
	out := mustCLI(t, nil, append([]string{"capacity", "acquire", "--tenant", "team-a", "--work-item", "w1", "--demand", "c1:slot:1", "--ttl", "1m", "--idempotency-key", "k1"}, tokenArgs...)...)
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Decision != "granted" || res.Leases[0].OwnerDigest != capacity.OwnerDigest("agent-7") {
		t.Errorf("capacity acquire as agent-7: %v %s", err, out)
	}
}

// serve's configuration errors name its flags: one loopback node with
// --principals and no TLS needs --peer-token-file.
func TestServeConfigErrorsNameFlags(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "principals.json")
	if err := os.WriteFile(pf, []byte(`[{"id":"ops","tenants":["*"],"roles":["admin"],"token_sha256":["`+identity.HashToken("x")+`"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "", "serve", "--id", "n1", "--data-dir", filepath.Join(dir, "d"), "--raft-addr", "127.0.0.1:0",
		"--http-addr", "127.0.0.1:0", "--bootstrap", "--principals", pf)
	if r.status == 0 || !strings.Contains(r.stderr, "--peer-token-file") || !strings.Contains(r.stderr, "--principals") || strings.Contains(r.stderr, "PeerToken") {
		t.Errorf("serve --principals without TLS or a peer token: %+v", r)
	}
	r = runCLI(t, nil, "", "serve", "--bootstrap", "--join", "http://127.0.0.1:1")
	if r.status != exitUsage || !strings.Contains(r.stderr, "--bootstrap and --join") {
		t.Errorf("serve --bootstrap --join: %+v", r)
	}
}
