package mcptools_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/cluster/clustertest"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolsOf is every tool the issue lists, by the domain whose commands
// they need.
var toolsOf = map[string][]string{
	"allocation": {"allocation_bind", "allocation_create_task", "allocation_transition_task", "allocation_post_note",
		"allocation_supersede_task", "allocation_list_tasks"},
	"authority": {"concept_reserve", "concept_reserve_next", "concept_transition", "concept_get"},
	"capacity":  {"capacity_acquire", "capacity_renew", "capacity_release", "capacity_status"},
	"workitem": {"workitem_submit", "workitem_submit_batch", "workitem_claim", "workitem_complete", "workitem_cancel",
		"workitem_get", "workitem_list", "reservation_reserve", "reservation_release", "reservation_query", "reservation_list_hosts"},
	"projection": {"projection_submit", "projection_acquire", "projection_publish", "projection_release",
		"publish_projection", "projection_target"},
	"nodes": {"node_create", "node_cas", "node_get"},
}

// want is the sorted tool names of the domains.
func want(domains ...string) []string {
	var out []string
	for _, d := range domains {
		out = append(out, toolsOf[d]...)
	}
	slices.Sort(out)
	return out
}

func toolNames(t *testing.T, s *mcp.ClientSession) ([]string, []*mcp.Tool) {
	t.Helper()
	res, err := s.ListTools(ctxOf(t), nil)
	must(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names, res.Tools
}

func templates(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListResourceTemplates(ctxOf(t), nil)
	must(t, err)
	var out []string
	for _, r := range res.ResourceTemplates {
		out = append(out, r.URITemplate)
	}
	slices.Sort(out)
	return out
}

// The tool list is the enabled domains' tools: all of them on a cluster
// of every built-in domain; on a cluster without projection, capacity,
// concepts and work items, none of theirs (nor the projection resource).
func TestToolListMatchesEnabledCommands(t *testing.T) {
	all := agent(t, "agent-a")
	names, tools := toolNames(t, all)
	if full := want("allocation", "authority", "capacity", "workitem", "projection", "nodes"); !slices.Equal(names, full) {
		t.Fatalf("tools on a cluster of every domain:\n got %v\nwant %v", names, full)
	}
	for _, tl := range tools {
		if len(tl.Description) < 40 {
			t.Errorf("tool %s: description %q says too little to act on", tl.Name, tl.Description)
		}
	}
	if got := templates(t, all); !slices.Equal(got, []string{"arbiter://projection/targets/{target_id}/current", "arbiter://spaces/{space}/tasks"}) {
		t.Fatalf("resource templates: %v", got)
	}

	reg, err := identity.NewRegistry([]identity.PrincipalConfig{{ID: "agent-a", Tenants: []string{"t"},
		Roles: []string{identity.RoleMember}, TokenSHA256: []string{identity.HashToken(tokens["agent-a"])}}})
	must(t, err)
	keep := []string{"nodes", "allocation"}
	small := clustertest.New(t, clustertest.Options{Nodes: 1, Principals: reg, Domains: func(int) []domain.Domain {
		var out []domain.Domain
		for _, d := range builtin.Domains() {
			if slices.Contains(keep, d.Name) {
				out = append(out, d)
			}
		}
		return out
	}})
	some := sessionOn(t, clientOf(t, small, "agent-a"))
	names, _ = toolNames(t, some)
	if w := want(keep...); !slices.Equal(names, w) {
		t.Fatalf("tools on a cluster of %v:\n got %v\nwant %v", keep, names, w)
	}
	if got := templates(t, some); !slices.Equal(got, []string{"arbiter://spaces/{space}/tasks"}) {
		t.Fatalf("resource templates of %v: %v", keep, got)
	}
}

// No tool takes an owner or a principal: identity is the credential's.
// Where the API binds an owner to the principal, the tool fills it: a
// lease acquired by agent-a through MCP is owned by agent-a's digest.
func TestIdentityIsTheCredentials(t *testing.T) {
	s := agent(t, "agent-a")
	_, tools := toolNames(t, s)
	for _, tl := range tools {
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				if props, ok := v["properties"].(map[string]any); ok {
					for name, p := range props {
						if strings.Contains(name, "owner") || strings.Contains(name, "principal") {
							t.Errorf("tool %s takes %s%s", tl.Name, path, name)
						}
						walk(path+name+".", p)
					}
				}
				if items, ok := v["items"]; ok {
					walk(path+"[]", items)
				}
			}
		}
		walk("", tl.InputSchema)
	}

	ctx, ops := ctxOf(t), newClient(t, "ops")
	cell := unique(t)
	_, err := ops.Capacity().UpdateCell(ctx, client.UpdateCellRequest{TenantRef: "t", Cell: client.CellSpec{CellID: cell, Capacities: map[string]uint64{"gpu": 2}}})
	must(t, err)
	r := call(t, s, "capacity_acquire", map[string]any{"tenant_ref": "t", "work_item_id": unique(t), "ttl_ms": 60000,
		"demands": []map[string]any{{"cell_id": cell, "resource_class": "gpu", "amount": 2}}}).ok(t)
	who, err := newClient(t, "agent-a").Cluster().Whoami(ctx)
	must(t, err)
	leases, _ := r.Body["leases"].([]any)
	if r.Body["decision"] != "granted" || len(leases) != 1 || leases[0].(map[string]any)["owner_digest"] != who.OwnerDigest {
		t.Fatalf("acquire as agent-a (owner %s): %s", who.OwnerDigest, r.Raw)
	}
	st := call(t, s, "capacity_status", map[string]any{"tenant_ref": "t", "cell_id": cell}).ok(t)
	if cells, _ := st.Body["cells"].([]any); len(cells) != 1 || cells[0].(map[string]any)["classes"].([]any)[0].(map[string]any)["used"] != float64(2) {
		t.Fatalf("capacity status: %s", st.Raw)
	}
	// agent-b cannot renew agent-a's lease: its own digest is sent.
	lease := leases[0].(map[string]any)
	ref := map[string]any{"lease_id": lease["lease_id"], "lease_epoch": lease["lease_epoch"], "fence_token": lease["fence_token"]}
	other := call(t, agent(t, "agent-b"), "capacity_renew", map[string]any{"tenant_ref": "t", "leases": []any{ref}})
	if !other.IsError {
		t.Fatalf("agent-b renewed agent-a's lease: %s", other.Raw)
	}
	// Exhausted: the API's decision, with what is available, in the detail.
	full := call(t, agent(t, "agent-b"), "capacity_acquire", map[string]any{"tenant_ref": "t", "work_item_id": unique(t), "ttl_ms": 60000,
		"demands": []map[string]any{{"cell_id": cell, "resource_class": "gpu", "amount": 1}}})
	if !full.IsError || full.code() != "exhausted" {
		t.Fatalf("acquire of a full cell: %s", full.Raw)
	}
	if avail, _ := full.get("error", "detail", "result", "available").([]any); len(avail) != 1 || avail[0].(map[string]any)["free"] != float64(0) {
		t.Fatalf("exhausted's detail: %s", full.Raw)
	}
	call(t, s, "capacity_release", map[string]any{"tenant_ref": "t", "leases": []any{ref}}).ok(t)
}
