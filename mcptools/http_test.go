package mcptools_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport adds a principal's token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpAgent connects the SDK's client to node i's /mcp with who's token.
func httpAgent(t *testing.T, i int, who string) *mcp.ClientSession {
	t.Helper()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "0"}, nil).Connect(ctxOf(t),
		&mcp.StreamableClientTransport{Endpoint: shared.URL(i) + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{tokens[who]}},
			DisableStandaloneSSE: true}, nil)
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Over /mcp (streamable HTTP on the nodes): a request without a
// credential is refused as the API refuses it; two agents on two nodes
// race one allocation slot, one wins and the other is told the winner,
// each acting as its own token's principal; a bad argument is refused
// naming the field.
func TestHTTPEndpoint(t *testing.T) {
	resp, err := http.Post(shared.URL(0)+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"unauthorized"`) {
		t.Fatalf("/mcp without a credential: %d %s", resp.StatusCode, body)
	}

	a, b := httpAgent(t, 0, "agent-a"), httpAgent(t, 1, "agent-b")
	names, _ := toolNames(t, a)
	if full := want("allocation", "authority", "capacity", "workitem", "projection", "nodes"); !slices.Equal(names, full) {
		t.Fatalf("tools over /mcp:\n got %v\nwant %v", names, full)
	}
	slug := space(t)
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, s := range []*mcp.ClientSession{a, b} {
		wg.Go(func() {
			results[i] = call(t, s, "allocation_create_task", map[string]any{"space": slug, "title": raceTitles[i], "delivery_mode": "result"})
		})
	}
	wg.Wait()
	if results[0].IsError == results[1].IsError {
		t.Fatalf("want one winner: %s / %s", results[0].Raw, results[1].Raw)
	}
	winner, won, lost := "agent-a", results[0], results[1]
	if won.IsError {
		winner, won, lost = "agent-b", lost, won
	}
	if won.get("task", "status") != "open" || won.get("task", "created_by") != winner ||
		lost.Body["error"] != "allocation_conflict" || lost.get("winner", "id") != won.get("task", "id") || lost.Meta["http_status"] != float64(409) {
		t.Fatalf("winner %s, loser %s", won.Raw, lost.Raw)
	}
	bad := call(t, b, "allocation_list_tasks", map[string]any{"space": slug, "limit": "ten"})
	if !bad.IsError || bad.code() != "invalid" || !strings.Contains(bad.message(), "limit") {
		t.Fatalf("a bad limit: %s", bad.Raw)
	}
	list := call(t, b, "allocation_list_tasks", map[string]any{"space": slug}).ok(t)
	if tasks, _ := list.Body["tasks"].([]any); len(tasks) != 1 {
		t.Fatalf("tasks: %s", list.Raw)
	}
}
