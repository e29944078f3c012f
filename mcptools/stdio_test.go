package mcptools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioAgent launches a real `arbiter mcp` process (built from this
// tree) as an agent host does, with who's token in ARBITER_TOKEN, and
// connects the SDK's client to it over its standard input and output.
func stdioAgent(t *testing.T, bin, who string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--addr", strings.Join(shared.URLs(), ","), "--timeout", "10s")
	cmd.Env = append(os.Environ(), "ARBITER_TOKEN="+tokens[who])
	cmd.Stderr = os.Stderr
	s, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "0"}, nil).
		Connect(ctxOf(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	must(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// buildArbiter builds the arbiter binary into a temporary directory.
func buildArbiter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "arbiter")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/arbiter").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Over stdio, against a real `arbiter mcp` process: the tool list is
// every enabled domain's; an agent there and one in another process race
// one allocation slot, one wins and the other is told the winner; a bad
// argument is refused naming the field.
func TestStdioAgainstArbiterMCP(t *testing.T) {
	bin := buildArbiter(t)
	a, b := stdioAgent(t, bin, "agent-a"), stdioAgent(t, bin, "agent-b")
	names, _ := toolNames(t, a)
	if full := want("allocation", "authority", "capacity", "workitem", "projection", "nodes"); !slices.Equal(names, full) {
		t.Fatalf("tools over stdio:\n got %v\nwant %v", names, full)
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
	won, lost := results[0], results[1]
	if won.IsError {
		won, lost = lost, won
	}
	if won.get("task", "status") != "open" || lost.Body["error"] != "allocation_conflict" ||
		lost.get("winner", "id") != won.get("task", "id") || lost.Body["write_occurred"] != false {
		t.Fatalf("winner %s, loser %s", won.Raw, lost.Raw)
	}
	// The winner's task carries the winner's principal: the process's
	// token decided who created it.
	creator := "agent-a"
	if won.Raw == results[1].Raw {
		creator = "agent-b"
	}
	if won.get("task", "created_by") != creator {
		t.Fatalf("created_by %v, want %s", won.get("task", "created_by"), creator)
	}

	bad := call(t, a, "allocation_transition_task", map[string]any{"space": slug, "task_id": "one", "action": "claim"})
	if !bad.IsError || bad.code() != "invalid" || !strings.Contains(bad.message(), "task_id") {
		t.Fatalf("a bad task_id: %s", bad.Raw)
	}
	list := call(t, b, "allocation_list_tasks", map[string]any{"space": slug}).ok(t)
	if tasks, _ := list.Body["tasks"].([]any); len(tasks) != 1 || tasks[0].(map[string]any)["status"] != "open" {
		t.Fatalf("tasks: %s", list.Raw)
	}
}
