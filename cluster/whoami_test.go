package cluster_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

func whoamiOf(t *testing.T, r isoReply) cluster.Whoami {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("whoami: %s", r)
	}
	var w cluster.Whoami
	if err := json.Unmarshal(r.body, &w); err != nil {
		t.Fatalf("whoami: %v in %s", err, r.body)
	}
	wantKeys(t, "whoami", r.body, "auth_mode", "credential", "principal", "tenants", "roles", "owner_digest", "trusted")
	return w
}

// whoami names a token's principal, its tenants and roles and the owner
// digest capacity and the concept authority derive for it, through any
// node; a missing or unknown token is 401.
func TestWhoamiTokenPrincipals(t *testing.T) {
	c := isoCluster(t, clustertest.Options{Nodes: 2})
	for _, p := range isoPrincipals {
		for _, i := range []int{0, 1} {
			w := whoamiOf(t, isoDo(t, isoClient, http.MethodGet, c.URL(i)+"/v1/auth/whoami", isoToken(p.id), nil))
			want := cluster.Whoami{AuthMode: "principals", Credential: "bearer_token", Principal: p.id, Tenants: p.tenants, Roles: p.roles,
				OwnerDigest: capacity.OwnerDigest(p.id)}
			if w.AuthMode != want.AuthMode || w.Credential != want.Credential || w.Principal != want.Principal || !slices.Equal(w.Tenants, want.Tenants) ||
				!slices.Equal(w.Roles, want.Roles) || w.OwnerDigest != want.OwnerDigest || w.Trusted {
				t.Errorf("node %d: whoami as %s: %+v, want %+v", i, p.id, w, want)
			}
		}
	}
	for _, tok := range []string{"", isoUnknownToken} {
		r := isoDo(t, isoClient, http.MethodGet, c.URL(0)+"/v1/auth/whoami", tok, nil)
		if r.status != http.StatusUnauthorized || r.code != errs.CodeUnauthorized {
			t.Errorf("whoami with token %q: %s, want 401", tok, r)
		}
	}
	if r := isoDo(t, isoClient, http.MethodGet, c.URL(0)+"/v1/auth/whoami?x=1", isoToken("admin"), nil); r.status != http.StatusUnprocessableEntity {
		t.Errorf("whoami with a query parameter: %s, want 422", r)
	}
	// The Go client asks the same.
	api, err := client.New([]string{c.Node(1).APIAddr()}, client.WithToken(isoToken("mem-a")))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	w, err := api.Cluster().Whoami(context.Background())
	if err != nil || w.Principal != "mem-a" || w.OwnerDigest != (identity.Principal{ID: "mem-a"}).OwnerDigest() {
		t.Fatalf("client's Whoami: %+v %v", w, err)
	}
}

// A client certificate names its principal; another node is a trusted
// peer; in open mode every caller is trusted and no owner digest is
// derived.
func TestWhoamiCertificatesPeersAndOpenMode(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, TLS: true, Principals: isoRegistry(t, []string{"admin"})})
	cert := c.ClientCA.Issue(t, "cert-a")
	reg := isoRegistry(t, []string{"admin"}, identity.PrincipalConfig{ID: "cert-a", Tenants: []string{"a", "b"}, Roles: []string{identity.RoleMember},
		CertSHA256: []string{identity.HashCert(cert.Certificate[0])}})
	if err := c.Node(0).SetPrincipals(reg); err != nil {
		t.Fatal(err)
	}
	u := c.URL(0) + "/v1/auth/whoami"
	w := whoamiOf(t, isoDo(t, tlsClient(c, &cert), http.MethodGet, u, "", nil))
	if w.Credential != "client_certificate" || w.Principal != "cert-a" || !slices.Equal(w.Tenants, []string{"a", "b"}) ||
		!slices.Equal(w.Roles, []string{"member"}) || w.OwnerDigest != capacity.OwnerDigest("cert-a") || w.Trusted {
		t.Errorf("whoami by certificate: %+v", w)
	}
	// A token wins over a certificate that names nobody.
	stranger := c.ClientCA.Issue(t, "stranger")
	if w := whoamiOf(t, isoDo(t, tlsClient(c, &stranger), http.MethodGet, u, isoToken("admin"), nil)); w.Principal != "admin" || w.Credential != "bearer_token" {
		t.Errorf("whoami by token over TLS: %+v", w)
	}
	// A node's own certificate is a peer's.
	nodeCert := c.PeerCA.Issue(t, "n9")
	if w := whoamiOf(t, isoDo(t, tlsClient(c, &nodeCert), http.MethodGet, u, "", nil)); w.Credential != "peer" || !w.Trusted || w.Principal != "" {
		t.Errorf("whoami by a node: %+v", w)
	}

	open := clustertest.New(t, clustertest.Options{Nodes: 1})
	w = whoamiOf(t, isoDo(t, isoClient, http.MethodGet, open.URL(0)+"/v1/auth/whoami", "", nil))
	if w.AuthMode != "open" || w.Credential != "none" || !w.Trusted || w.Principal != "" || w.OwnerDigest != "" ||
		!slices.Equal(w.Tenants, []string{"*"}) || !slices.Equal(w.Roles, []string{"admin"}) {
		t.Errorf("whoami in open mode: %+v", w)
	}
}
