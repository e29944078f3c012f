package mcptools_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/mcptools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests share one 3-node cluster with authentication (started once
// in TestMain), and keep apart by names unique to each test. Agents
// reach it through MCP sessions over the SDK's in-memory transport, each
// backed by a client with its own credential.
//
//	ops      tenants *  admin
//	agent-a  tenant t   member
//	agent-b  tenant t   member
var (
	shared *clustertest.Cluster
	// roots are the nodes' projection runtime roots, by node.
	roots  []string
	tokens = map[string]string{"ops": "mcp-test-token-ops", "agent-a": "mcp-test-token-a", "agent-b": "mcp-test-token-b"}
)

// leaseTTL is the projection lease TTL the shared cluster is configured
// with: short, so that a takeover test waits little.
const leaseTTL = 1500 * time.Millisecond

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptools tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var principals []identity.PrincipalConfig
	for _, id := range []string{"ops", "agent-a", "agent-b"} {
		p := identity.PrincipalConfig{ID: id, Tenants: []string{"t"}, Roles: []string{identity.RoleMember},
			TokenSHA256: []string{identity.HashToken(tokens[id])}}
		if id == "ops" {
			p.Tenants, p.Roles = []string{"*"}, []string{identity.RoleAdmin}
		}
		principals = append(principals, p)
	}
	reg, err := identity.NewRegistry(principals)
	if err != nil {
		return 0, err
	}
	root, err := os.MkdirTemp("", "arbiter-mcp-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(root)
	for i := range 3 {
		roots = append(roots, fmt.Sprintf("%s/projection-%d", root, i))
		if err := os.Mkdir(roots[i], 0o700); err != nil {
			return 0, err
		}
	}
	shared, err = clustertest.Start(clustertest.Options{Nodes: 3, Principals: reg,
		Domains: func(i int) []domain.Domain {
			return builtin.With(builtin.Options{ProjectionRoot: roots[i]})
		},
		// Every node serves /mcp, as arbiter serve --mcp mounts it.
		Configure: func(_ int, cfg *cluster.Config) {
			cfg.Mounts = map[string]func(http.Handler) http.Handler{
				"/mcp": func(api http.Handler) http.Handler { return mcptools.HTTPHandler(api, 10*time.Second) }}
		}})
	if err != nil {
		return 0, err
	}
	defer shared.Close()
	ops, err := client.New(shared.URLs(), client.WithToken(tokens["ops"]))
	if err != nil {
		return 0, err
	}
	defer ops.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := ops.Projection().SetConfig(ctx, client.ConfigRequest{LeaseTTLMs: leaseTTL.Milliseconds()}); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// newClient is a client of every node of the shared cluster as who.
func newClient(t testing.TB, who string) *client.Client {
	t.Helper()
	return clientOf(t, shared, who)
}

func clientOf(t testing.TB, c *clustertest.Cluster, who string) *client.Client {
	t.Helper()
	cl, err := client.New(c.URLs(), client.WithToken(tokens[who]), client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// agent is an MCP session of the server for who's credential on the
// shared cluster, over the SDK's in-memory transport.
func agent(t testing.TB, who string) *mcp.ClientSession {
	t.Helper()
	return sessionOn(t, newClient(t, who))
}

// sessionOn serves c's cluster as an MCP server and connects an SDK
// client to it in memory.
func sessionOn(t testing.TB, c *client.Client) *mcp.ClientSession {
	t.Helper()
	ctx := ctxOf(t)
	enabled, err := mcptools.EnabledOf(ctx, c)
	must(t, err)
	server := mcptools.New(enabled, mcptools.Fixed(c))
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	must(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "0"}, nil).Connect(ctx, clientEnd, nil)
	must(t, err)
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	return cs
}

// result is a tool call's outcome as the test reads it: the JSON body
// its text content carries, whether it is an error, and its _meta.
type result struct {
	IsError bool
	Body    map[string]any
	Raw     string
	Meta    map[string]any
}

// call calls a tool; a protocol error fails the test (refusals are
// results).
func call(t testing.TB, s *mcp.ClientSession, name string, args any) result {
	t.Helper()
	res, err := s.CallTool(ctxOf(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return decodeResult(t, name, res)
}

func decodeResult(t testing.TB, name string, res *mcp.CallToolResult) result {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T, want text", name, res.Content[0])
	}
	out := result{IsError: res.IsError, Raw: text.Text, Meta: res.Meta}
	if err := json.Unmarshal([]byte(text.Text), &out.Body); err != nil {
		t.Fatalf("%s: content is not a JSON object: %v: %s", name, err, text.Text)
	}
	return out
}

// ok fails t unless r succeeded.
func (r result) ok(t testing.TB) result {
	t.Helper()
	if r.IsError {
		t.Fatalf("tool error: %s", r.Raw)
	}
	return r
}

// code is the code of an {"error": {...}} body ("" for another).
func (r result) code() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// message is the message of an {"error": {...}} body.
func (r result) message() string {
	e, _ := r.Body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// get is the value at a path of r's body (nil when absent).
func (r result) get(path ...string) any {
	var v any = r.Body
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
