package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
)

// The tests share one 3-node cluster with authentication (started once
// in TestMain: a cluster per test would take most of the time budget),
// and keep apart by names unique to each test (tenants, ids, slugs).
//
//	ops    tenants *  admin
//	agent  tenant t   member
var (
	shared *clustertest.Cluster
	tokens = map[string]string{"ops": "client-test-token-ops", "agent": "client-test-token-agent"}
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	reg, err := identity.NewRegistry([]identity.PrincipalConfig{
		{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}, TokenSHA256: []string{identity.HashToken(tokens["ops"])}},
		{ID: "agent", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}, TokenSHA256: []string{identity.HashToken(tokens["agent"])}},
	})
	if err != nil {
		return 0, err
	}
	root, err := os.MkdirTemp("", "arbiter-client-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(root)
	for i := range 3 {
		if err := os.Mkdir(fmt.Sprintf("%s/projection-%d", root, i), 0o700); err != nil {
			return 0, err
		}
	}
	shared, err = clustertest.Start(clustertest.Options{Nodes: 3, Principals: reg,
		// Every node writes hook projections under a root of its own.
		Domains: func(i int) []domain.Domain {
			return builtin.With(builtin.Options{ProjectionRoot: fmt.Sprintf("%s/projection-%d", root, i)})
		}})
	if err != nil {
		return 0, err
	}
	defer shared.Close()
	return m.Run(), nil
}

// newClient is a client of every node of the shared cluster as who.
func newClient(t testing.TB, who string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(shared.URLs(), append([]client.Option{client.WithToken(tokens[who]), client.WithTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

var seq atomic.Int64

// unique is a name unique to the test and the call.
func unique(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano()%1e9, seq.Add(1))
}

// digest is "sha256:" and the hex of data's digest.
func digest(data string) string {
	sum := sha256.Sum256([]byte(data))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func ctxOf(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// must fails t unless err is nil.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails t unless err is an error of code.
func wantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if !errors.Is(err, &errs.Error{Code: code}) || errs.CodeOf(err) != code {
		t.Fatalf("error %v (code %s), want %s", err, errs.CodeOf(err), code)
	}
}
