package mcptools_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readJSON reads a resource and decodes its one JSON text.
func readJSON(t *testing.T, s *mcp.ClientSession, uri string) (map[string]any, string) {
	t.Helper()
	res, err := s.ReadResource(ctxOf(t), &mcp.ReadResourceParams{URI: uri})
	must(t, err)
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("%s: contents %+v", uri, res.Contents)
	}
	var out map[string]any
	must(t, json.Unmarshal([]byte(res.Contents[0].Text), &out))
	return out, res.Contents[0].Text
}

// The resources are the API's reads: the cluster's status and
// capabilities, a space's tasks, a target's current publication byte
// for byte as current.json.
func TestResources(t *testing.T) {
	s := agent(t, "agent-a")
	status, _ := readJSON(t, s, "arbiter://cluster/status")
	if status["leader_id"] == "" || len(status["members"].([]any)) != 3 {
		t.Fatalf("status: %v", status)
	}
	caps, _ := readJSON(t, s, "arbiter://cluster/capabilities")
	if domains, _ := caps["enabled"].(map[string]any)["domains"].([]any); len(domains) < 6 {
		t.Fatalf("capabilities: %v", caps)
	}

	slug := space(t)
	created := call(t, s, "allocation_create_task", map[string]any{"space": slug, "title": raceTitles[0], "delivery_mode": "result"}).ok(t)
	tasks, _ := readJSON(t, s, "arbiter://spaces/"+slug+"/tasks")
	if list, _ := tasks["tasks"].([]any); len(list) != 1 || list[0].(map[string]any)["id"] != created.get("task", "id") {
		t.Fatalf("space tasks: %v", tasks)
	}

	targetID := target(t)
	pub := call(t, s, "publish_projection", map[string]any{"target_id": targetID, "holder_instance_digest": digest("resources"),
		"channels": []map[string]any{{"channel": channel, "source_watermark": 1, "envelope": envelope(1, "resources")}}}).ok(t)
	_, text := readJSON(t, s, "arbiter://projection/targets/"+targetID+"/current")
	currentOnEveryNode(t, targetID, uint64(pub.get("publication_seq").(float64)))
	file, err := os.ReadFile(filepath.Join(roots[0], "hook-projections", targetID, "current.json"))
	must(t, err)
	if strings.TrimSuffix(text, "\n") != string(file) { // the API ends its body with a newline
		t.Fatalf("current resource:\n%s\nnode 0's current.json:\n%s", text, file)
	}
	if _, err := s.ReadResource(ctxOf(t), &mcp.ReadResourceParams{URI: "arbiter://spaces/" + unique(t) + "/tasks"}); err == nil {
		t.Fatal("the tasks of a space that does not exist")
	}
}
