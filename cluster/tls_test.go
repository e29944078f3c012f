package cluster_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// tlsClient is an HTTPS client that trusts the cluster's node CA and
// presents cert (none when nil).
func tlsClient(c *clustertest.Cluster, cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: c.PeerCA.Pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// tlsTry is isoTry: a refused handshake is an error, not a failure.
func tlsTry(t *testing.T, client *http.Client, method, u, token string, body any) (isoReply, error) {
	t.Helper()
	return isoTry(client, method, u, token, body)
}

// tlsRefused requires a refusal at the TLS handshake or a 401.
func tlsRefused(t *testing.T, what string, r isoReply, err error) {
	t.Helper()
	if err == nil && r.status != http.StatusUnauthorized {
		t.Errorf("%s: %s, want a refused handshake or 401", what, r)
	}
}

// tlsCluster is a 3-node cluster over TCP with TLS for raft and the API.
func tlsCluster(t *testing.T) *clustertest.Cluster {
	t.Helper()
	return isoCluster(t, clustertest.Options{Nodes: 3, TCP: true, TLS: true})
}

// tlsTerms is every running node's term.
func tlsTerms(c *clustertest.Cluster) []uint64 {
	var out []uint64
	for _, i := range c.Running() {
		out = append(out, c.Node(i).Status().Term)
	}
	return out
}

// tlsBatch is a forwarded batch that creates node id with the empty
// (trusted) principal: what a node sends on a trusted host's behalf.
func tlsBatch(t *testing.T, id string) []byte {
	t.Helper()
	payload, err := arblog.Marshal(nodes.CreateCommand{NodeID: id})
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := arblog.Encode(arblog.Command{Type: nodes.CmdCreate, Version: 1, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	b, err := arblog.Marshal(struct {
		Commands [][]byte `msgpack:"cmds"`
	}{[][]byte{cmd}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A node whose certificate the cluster's CA did not sign cannot join,
// forward commands, or speak raft to the members; a client certificate
// from the client CA identifies the principal whose digest it matches.
func TestTLSRogueNodeIsRefused(t *testing.T) {
	c := tlsCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	rogueCA := clustertest.NewCA(t, "rogue-ca")
	rogueCert := rogueCA.Issue(t, "rogue")
	admin := isoToken("admin")
	terms := tlsTerms(c)

	t.Run("join", func(t *testing.T) {
		both := x509.NewCertPool()
		both.AddCert(rogueCA.Cert)
		both.AddCert(c.PeerCA.Cert)
		for _, tc := range []struct {
			name  string
			trust *x509.CertPool
		}{
			{"trusting only its own CA", rogueCA.Pool},
			// It trusts the members, so the refusal is theirs.
			{"trusting the cluster's CA", both},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg := cluster.DefaultConfig()
				cfg.Domains = builtin.Domains()
				cfg.ID = "rogue"
				cfg.DataDir = t.TempDir()
				cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
				cfg.NoSyncUnsafe = true
				cfg.Principals = isoRegistry(t, nil)
				cfg.TLS = &cluster.TLSConfig{Certificate: rogueCert, PeerCAs: tc.trust}
				cfg.Join = []string{c.URL(follower), c.URL(leader)}
				n, err := cluster.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if err := n.Start(ctx); err == nil {
					_ = n.Close()
					t.Fatal("the rogue node joined")
				}
			})
		}
		// The join request itself, over HTTPS with the rogue certificate.
		r, err := tlsTry(t, tlsClient(c, &rogueCert), http.MethodPost, c.URL(leader)+"/v1/cluster/join", "",
			cluster.JoinRequest{ID: "rogue", RaftAddr: "127.0.0.1:1", APIAddr: "127.0.0.1:2"})
		tlsRefused(t, "join with the rogue certificate", r, err)
		r, err = tlsTry(t, tlsClient(c, nil), http.MethodPost, c.URL(leader)+"/v1/cluster/join", "",
			cluster.JoinRequest{ID: "rogue", RaftAddr: "127.0.0.1:1", APIAddr: "127.0.0.1:2"})
		if err != nil || r.status != http.StatusUnauthorized {
			t.Errorf("join without a certificate: %s %v, want 401", r, err)
		}
		for _, m := range c.Node(leader).Status().Members {
			if m.ID == "rogue" {
				t.Errorf("rogue is a member: %+v", m)
			}
		}
	})

	t.Run("forward", func(t *testing.T) {
		clientCert := c.ClientCA.Issue(t, "client-admin")
		// The client certificate names the admin: still not a node.
		reg := isoRegistry(t, []string{"mem-a", "mem-b"}, identity.PrincipalConfig{ID: "admin", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin},
			TokenSHA256: []string{identity.HashToken(admin)}, CertSHA256: []string{identity.HashCert(clientCert.Certificate[0])}})
		for _, i := range c.Running() {
			if err := c.Node(i).SetPrincipals(reg); err != nil {
				t.Fatal(err)
			}
		}
		for _, i := range []int{leader, follower} {
			apply := c.URL(i) + "/v1/internal/apply"
			r, err := tlsTry(t, tlsClient(c, &rogueCert), http.MethodPost, apply, "", tlsBatch(t, "rogue-forwarded"))
			tlsRefused(t, "internal apply with the rogue certificate", r, err)
			r, err = tlsTry(t, tlsClient(c, nil), http.MethodPost, apply, "", tlsBatch(t, "rogue-forwarded"))
			if err != nil || r.status != http.StatusUnauthorized {
				t.Errorf("internal apply without a certificate: %s %v, want 401", r, err)
			}
			for name, client := range map[string]*http.Client{"admin's client certificate": tlsClient(c, &clientCert), "admin token": tlsClient(c, nil)} {
				token := ""
				if name == "admin token" {
					token = admin
				}
				r, err = tlsTry(t, client, http.MethodPost, apply, token, tlsBatch(t, "rogue-forwarded"))
				if err != nil || r.status != http.StatusForbidden {
					t.Errorf("internal apply with the %s: %s %v, want 403", name, r, err)
				}
			}
			r, err = tlsTry(t, tlsClient(c, &rogueCert), http.MethodPost, c.URL(i)+"/v1/internal/query", "", []byte{0x80})
			tlsRefused(t, "internal query with the rogue certificate", r, err)
		}
		get := func(id string) isoReply {
			r, err := tlsTry(t, tlsClient(c, nil), http.MethodGet, c.URL(leader)+"/v1/nodes/get?node_id="+id, admin, nil)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		if r := get("rogue-forwarded"); r.status != http.StatusNotFound {
			t.Errorf("a refused forward created its node: %s", r)
		}
		// Positive control: a certificate of the node CA is a node.
		nodeCert := c.PeerCA.Issue(t, "n9")
		r, err := tlsTry(t, tlsClient(c, &nodeCert), http.MethodPost, c.URL(c.WaitLeader(10*time.Second))+"/v1/internal/apply", "", tlsBatch(t, "peer-forwarded"))
		if err != nil || r.status != 200 || r.code != "" {
			t.Fatalf("internal apply with a node certificate: %s %v", r, err)
		}
		if r := get("peer-forwarded"); r.status != 200 {
			t.Errorf("the node's forward did not apply: %s", r)
		}
	})

	t.Run("raft", func(t *testing.T) {
		leader := c.WaitLeader(10 * time.Second)
		nodeCert := c.PeerCA.Issue(t, "n9")
		term := c.Node(leader).Status().Term
		skip := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
		withCert := func(cert tls.Certificate) *tls.Config {
			cfg := skip.Clone()
			cfg.Certificates = []tls.Certificate{cert}
			return cfg
		}
		for _, tc := range []struct {
			name string
			dial *tls.Config // nil: plain TCP
			ok   bool
		}{
			{"plain TCP", nil, false},
			{"TLS without a certificate", skip, false},
			{"TLS with the rogue certificate", withCert(rogueCert), false},
			{"TLS with a client CA certificate", withCert(c.ClientCA.Issue(t, "client")), false},
			// Positive control: the harness reaches raft at all.
			{"TLS with a node certificate", withCert(nodeCert), true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				trans := tlsRaftTransport(t, tc.dial)
				hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("rogue"), Addr: []byte(trans.LocalAddr())}
				for _, i := range c.Running() {
					n := c.Node(i)
					id, addr := raft.ServerID(n.ID()), raft.ServerAddress(n.RaftAddr())
					if tc.ok {
						// A harmless vote request of an old term.
						var resp raft.RequestVoteResponse
						err := trans.RequestVote(id, addr, &raft.RequestVoteRequest{RPCHeader: hdr, Term: 0}, &resp)
						if err != nil || resp.Granted {
							t.Errorf("node %s: vote request of a node: %+v %v", n.ID(), resp, err)
						}
						continue
					}
					// What a rogue would send to take over: a vote request
					// of a far higher term, a leader's heartbeat of that
					// term, and an order to start an election.
					var vote raft.RequestVoteResponse
					if err := trans.RequestVote(id, addr, &raft.RequestVoteRequest{RPCHeader: hdr, Term: term + 100,
						LastLogIndex: 1 << 40, LastLogTerm: term + 100, LeadershipTransfer: true}, &vote); err == nil {
						t.Errorf("node %s answered a rogue vote request: %+v", n.ID(), vote)
					}
					var app raft.AppendEntriesResponse
					if err := trans.AppendEntries(id, addr, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: term + 100, LeaderCommitIndex: 1 << 40}, &app); err == nil {
						t.Errorf("node %s answered a rogue heartbeat: %+v", n.ID(), app)
					}
					var timeout raft.TimeoutNowResponse
					if err := trans.TimeoutNow(id, addr, &raft.TimeoutNowRequest{RPCHeader: hdr}, &timeout); err == nil {
						t.Errorf("node %s answered a rogue TimeoutNow: %+v", n.ID(), timeout)
					}
				}
			})
		}
		// A raw TCP client gets at most a TLS alert, then a closed
		// connection: never a raft answer.
		conn, err := net.DialTimeout("tcp", c.Node(leader).RaftAddr(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write(append([]byte{0 /* rpcAppendEntries */}, bytes.Repeat([]byte{0x90}, 64)...))
		got, err := io.ReadAll(conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("the raft port kept a plain TCP connection open: %v", err)
		}
		if len(got) > 0 && got[0] != 0x15 { // a TLS alert record
			t.Errorf("the raft port answered plain TCP with %x", got)
		}
	})

	t.Run("raft to a rogue", func(t *testing.T) {
		// Even if an admin adds a member at a rogue address, the leader
		// sends it nothing: it does not accept the rogue's certificate.
		var attempts, handshakes, received atomic.Int64
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{rogueCert}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				attempts.Add(1)
				go func() {
					defer conn.Close()
					_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
					if conn.(*tls.Conn).Handshake() != nil {
						return
					}
					handshakes.Add(1)
					n, _ := io.Copy(io.Discard, conn)
					received.Add(n)
				}()
			}
		}()
		client := tlsClient(c, nil)
		r, err := tlsTry(t, client, http.MethodPost, c.URL(c.WaitLeader(10*time.Second))+"/v1/cluster/join", admin,
			cluster.JoinRequest{ID: "rogue-raft", RaftAddr: ln.Addr().String(), APIAddr: "127.0.0.1:1", Serves: domain.Served(builtin.Domains())})
		if err != nil || r.status != 200 {
			t.Fatalf("admin join of the rogue address: %s %v", r, err)
		}
		t.Cleanup(func() {
			r, err := tlsTry(t, client, http.MethodPost, c.URL(c.WaitLeader(10*time.Second))+"/v1/cluster/remove", admin, cluster.RemoveRequest{ID: "rogue-raft"})
			if err != nil || r.status != 200 {
				t.Errorf("remove rogue-raft: %s %v", r, err)
			}
		})
		if !c.Eventually(5*time.Second, func() bool { return attempts.Load() > 0 }) {
			t.Fatal("the leader never dialed the new member")
		}
		time.Sleep(500 * time.Millisecond)
		if handshakes.Load() != 0 || received.Load() != 0 {
			t.Errorf("the leader completed %d handshakes with the rogue and sent it %d bytes", handshakes.Load(), received.Load())
		}
	})

	if got := tlsTerms(c); len(got) != len(terms) {
		t.Errorf("running nodes changed: terms %v, then %v", terms, got)
	} else {
		for i := range got {
			if got[i] != terms[i] {
				t.Errorf("terms moved from %v to %v: a rogue disturbed the cluster", terms, got)
				break
			}
		}
	}
}

// tlsStream is a raft stream layer that dials with cfg, or plain TCP.
type tlsStream struct {
	net.Listener
	cfg *tls.Config
}

func (s tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if s.cfg == nil {
		return net.DialTimeout("tcp", string(addr), timeout)
	}
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), s.cfg)
}

func tlsRaftTransport(t *testing.T, cfg *tls.Config) *raft.NetworkTransport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransport(tlsStream{Listener: ln, cfg: cfg}, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { _ = trans.Close() })
	return trans
}

// A client certificate from the client CA authenticates as the principal
// whose cert_sha256 matches it; others are refused.
func TestTLSClientCertificates(t *testing.T) {
	c := tlsCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % 3
	certA := c.ClientCA.Issue(t, "cert-a")
	unregistered := c.ClientCA.Issue(t, "nobody")
	rogue := clustertest.NewCA(t, "rogue-clients").Issue(t, "cert-a")
	reg := isoRegistry(t, nil, identity.PrincipalConfig{ID: "cert-a", Tenants: []string{"a"}, Roles: []string{identity.RoleMember},
		CertSHA256: []string{identity.HashCert(certA.Certificate[0])}})
	for _, i := range c.Running() {
		if err := c.Node(i).SetPrincipals(reg); err != nil {
			t.Fatal(err)
		}
	}
	base := c.URL(follower)
	cases := []struct {
		name   string
		cert   *tls.Certificate
		method string
		path   string
		body   any
		status int // 0: refused at the handshake or 401
	}{
		{"registered: own tenant", &certA, http.MethodGet, "/v1/concepts/list?tenant_ref=a", nil, 200},
		{"registered: other tenant", &certA, http.MethodGet, "/v1/concepts/list?tenant_ref=b", nil, 404},
		{"registered: admin route", &certA, http.MethodGet, "/v1/nodes/get?node_id=x", nil, 403},
		{"registered: reserve", &certA, http.MethodPost, "/v1/concepts/reserve",
			authority.ReserveRequest{ConceptID: "ISO-42", TenantRef: "a", RequestRef: "r", PurposeDigest: "p"}, 201},
		{"unregistered client certificate", &unregistered, http.MethodGet, "/v1/concepts/list?tenant_ref=a", nil, 401},
		{"certificate of an unknown CA", &rogue, http.MethodGet, "/v1/concepts/list?tenant_ref=a", nil, 0},
		{"no certificate", nil, http.MethodGet, "/v1/concepts/list?tenant_ref=a", nil, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tlsTry(t, tlsClient(c, tc.cert), tc.method, base+tc.path, "", tc.body)
			if tc.status == 0 {
				tlsRefused(t, tc.name, r, err)
				return
			}
			if err != nil || r.status != tc.status {
				t.Fatalf("%s %v, want %d", r, err, tc.status)
			}
			if tc.status == 201 {
				var res authority.ReserveResult
				if err := json.Unmarshal(r.body, &res); err != nil || res.Record.OwnerRef != (identity.Principal{ID: "cert-a"}).OwnerDigest() {
					t.Errorf("the reserve did not run as cert-a: %s", r.body)
				}
			}
		})
	}
	// The unknown CA's certificate bears the same name as the registered
	// one; it must not have created anything.
	r, err := tlsTry(t, tlsClient(c, nil), http.MethodGet, base+"/v1/concepts/list?tenant_ref=a", isoToken("admin"), nil)
	if err != nil || r.status != 200 || strings.Count(string(r.body), `"concept_id"`) != 1 {
		t.Errorf("tenant a's claims: %s %v", r, err)
	}
	// Plain HTTP to the TLS API is not served.
	resp, err := isoClient.Get("http://" + c.Node(follower).APIAddr() + "/v1/concepts/list?tenant_ref=a")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP served by a TLS node")
		}
	}
}

// Validate allows open development mode only on loopback, and requires
// node authentication (TLS beyond loopback, TLS or a peer token on it)
// once principals are configured.
func TestOpenModeValidateLoopbackRule(t *testing.T) {
	reg := isoRegistry(t, []string{"admin"})
	ca := clustertest.NewCA(t, "validate-ca")
	tlsCfg := &cluster.TLSConfig{Certificate: ca.Issue(t, "n1"), PeerCAs: ca.Pool}
	const peerToken = "validate-peer-token-0123456789"
	cases := []struct {
		name string
		edit func(*cluster.Config)
		want string // error fragment; "" when valid
	}{
		{"open on loopback", func(c *cluster.Config) {}, ""},
		{"open on localhost", func(c *cluster.Config) { c.HTTPAddr, c.RaftAddr = "localhost:0", "localhost:0" }, ""},
		{"open on IPv6 loopback", func(c *cluster.Config) { c.HTTPAddr, c.RaftAddr = "[::1]:0", "[::1]:0" }, ""},
		{"open on 127.0.0.2", func(c *cluster.Config) { c.HTTPAddr = "127.0.0.2:0" }, ""},
		{"open API on all interfaces", func(c *cluster.Config) { c.HTTPAddr = "0.0.0.0:8000" }, "open mode"},
		{"open API with an empty host", func(c *cluster.Config) { c.HTTPAddr = ":8000" }, "open mode"},
		{"open API on IPv6 any", func(c *cluster.Config) { c.HTTPAddr = "[::]:8000" }, "open mode"},
		{"open raft on a LAN address", func(c *cluster.Config) { c.RaftAddr = "10.0.0.1:7000" }, "open mode"},
		{"open raft advertised beyond loopback", func(c *cluster.Config) { c.RaftAdvertise = "192.168.1.2:7000" }, "open mode"},
		{"open API advertised beyond loopback", func(c *cluster.Config) { c.HTTPAdvertise = "arbiter.example.com:8000" }, "open mode"},
		{"open with a host name", func(c *cluster.Config) { c.HTTPAddr = "arbiter.internal:8000" }, "open mode"},
		{"open beyond loopback with TLS", func(c *cluster.Config) { c.HTTPAddr, c.TLS = "0.0.0.0:8000", tlsCfg }, "open mode"},
		{"open beyond loopback with a peer token", func(c *cluster.Config) { c.HTTPAddr, c.PeerToken = "0.0.0.0:8000", peerToken }, "open mode"},
		{"open with an in-process transport", func(c *cluster.Config) {
			_, c.Transport = raft.NewInmemTransport("n1")
			c.RaftAddr = "10.0.0.1:7000"
		}, ""},
		{"open API beyond loopback with an in-process transport", func(c *cluster.Config) {
			_, c.Transport = raft.NewInmemTransport("n1")
			c.HTTPAddr = "0.0.0.0:8000"
		}, "open mode"},
		{"principals beyond loopback without TLS", func(c *cluster.Config) { c.Principals, c.HTTPAddr = reg, "0.0.0.0:8000" }, "TLS is required"},
		{"principals beyond loopback with only a peer token", func(c *cluster.Config) {
			c.Principals, c.RaftAddr, c.PeerToken = reg, "10.0.0.1:7000", peerToken
		}, "TLS is required"},
		{"principals beyond loopback with TLS", func(c *cluster.Config) {
			c.Principals, c.HTTPAddr, c.RaftAddr, c.TLS = reg, "0.0.0.0:8000", "0.0.0.0:7000", tlsCfg
		}, ""},
		{"principals on loopback without TLS or a peer token", func(c *cluster.Config) { c.Principals = reg }, "TLS or a PeerToken"},
		{"principals on loopback with a peer token", func(c *cluster.Config) { c.Principals, c.PeerToken = reg, peerToken }, ""},
		{"principals on loopback with TLS", func(c *cluster.Config) { c.Principals, c.TLS = reg, tlsCfg }, ""},
		{"short peer token", func(c *cluster.Config) { c.Principals, c.PeerToken = reg, "short-secret" }, "PeerToken"},
		{"TLS without a certificate", func(c *cluster.Config) { c.Principals, c.TLS = reg, &cluster.TLSConfig{PeerCAs: ca.Pool} }, "TLS"},
		{"TLS without peer CAs", func(c *cluster.Config) {
			c.Principals, c.TLS = reg, &cluster.TLSConfig{Certificate: tlsCfg.Certificate}
		}, "TLS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cluster.DefaultConfig()
			cfg.Domains = builtin.Domains()
			cfg.DataDir = t.TempDir()
			tc.edit(&cfg)
			err := cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			for _, secret := range []string{peerToken, "short-secret"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error reveals the peer token: %v", err)
				}
			}
			if n, err := cluster.New(cfg); err == nil || n != nil {
				t.Errorf("New accepted it: %v", err)
			}
		})
	}
}

// Without principals a node runs in open development mode and says so;
// every caller is trusted, and it cannot be switched to authentication.
func TestOpenModeClusterSaysOpen(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 1})
	open := clustertest.New(t, clustertest.Options{Nodes: 1})
	if got := open.Node(0).AuthMode(); got != "open" {
		t.Errorf("AuthMode = %q, want open", got)
	}
	r := isoDo(t, isoClient, http.MethodGet, open.URL(0)+"/v1/cluster/status", "", nil)
	var s cluster.Status
	if r.status != 200 || json.Unmarshal(r.body, &s) != nil || s.AuthMode != "open" {
		t.Errorf("status without a credential in open mode: %s", r)
	}
	// Any caller, any token, is trusted: the raw node API answers.
	r = isoDo(t, isoClient, http.MethodPost, open.URL(0)+"/v1/nodes/create", isoUnknownToken, nodes.CreateRequest{NodeID: "open-node"})
	if r.status != 200 {
		t.Errorf("open mode create: %s", r)
	}
	if err := open.Node(0).SetPrincipals(isoRegistry(t, nil)); err == nil {
		t.Error("an open node accepted principals at run time")
	}
	if got := open.Node(0).AuthMode(); got != "open" {
		t.Errorf("AuthMode after a refused switch = %q", got)
	}
	// With principals, the same status says so.
	if got := c.Node(0).AuthMode(); got != "principals" {
		t.Errorf("AuthMode with principals = %q", got)
	}
	r = isoDo(t, isoClient, http.MethodGet, c.URL(0)+"/v1/cluster/status", isoToken("read-a"), nil)
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"auth_mode":"principals"`)) {
		t.Errorf("status with principals: %s", r)
	}
}
