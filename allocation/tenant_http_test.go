package allocation_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// Principals of the tenant tests: ctl-a, mem-a and read-a act in tenant
// a, mem-b in tenant b.
var tenantPrincipals = []identity.PrincipalConfig{
	{ID: "ctl-a", Tenants: []string{"a"}, Roles: []string{identity.RoleController}},
	{ID: "mem-a", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}},
	{ID: "read-a", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}},
	{ID: "mem-b", Tenants: []string{"b"}, Roles: []string{identity.RoleMember}},
}

func tenantToken(id string) string { return "alloc-tenant-token-" + id }

// TestHTTPOtherTenant: a space is invisible to another tenant's readers
// (every read answers 404 not_found, word for word the answer about a
// slug no one has put), its writers are refused (403) and nothing
// changes, while its own tenant reads and writes; a put without
// tenant_ref keeps the space's tenant.
func TestHTTPOtherTenant(t *testing.T) {
	var cfgs []identity.PrincipalConfig
	for _, p := range tenantPrincipals {
		p.TokenSHA256 = []string{identity.HashToken(tenantToken(p.ID))}
		cfgs = append(cfgs, p)
	}
	reg, err := identity.NewRegistry(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Principals: reg})
	leader := c.WaitLeader(10 * time.Second)
	base := c.URL((leader + 1) % 3)
	as := func(who, method, path string, body any) reply {
		t.Helper()
		return call(t, method, base+path, body, "Authorization", "Bearer "+tenantToken(who))
	}
	wantStatus(t, "put", as("ctl-a", http.MethodPut, "/v1/spaces/sa", map[string]any{"tenant_ref": "a", "catalog": []any{}}), 200)
	wantStatus(t, "create", as("mem-a", http.MethodPost, "/v1/spaces/sa/tasks", map[string]any{"title": "secret work", "delivery_mode": "result"}), 201)
	note := map[string]any{"kind": "post_review_note", "criterion_index": nil, "body": "secret note", "delivery_mode": "result"}
	wantStatus(t, "note", as("mem-a", http.MethodPost, "/v1/spaces/sa/tasks/1/notes", note), 201)

	reads := []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/v1/spaces/%s", nil},
		{http.MethodPost, "/v1/spaces/%s/bind", map[string]any{"title": "secret work"}},
		{http.MethodGet, "/v1/spaces/%s/tasks", nil},
		{http.MethodGet, "/v1/spaces/%s/tasks?status=open&limit=5", nil},
		{http.MethodGet, "/v1/spaces/%s/tasks/1", nil},
		{http.MethodGet, "/v1/spaces/%s/tasks/1/notes", nil},
		{http.MethodGet, "/v1/spaces/%s/reservations", nil},
		{http.MethodGet, "/v1/spaces/%s/occupancy?limit=3", nil},
		{http.MethodGet, "/v1/spaces/%s/duplicates", nil},
	}
	for _, rd := range reads {
		existing := as("mem-b", rd.method, fmt.Sprintf(rd.path, "sa"), rd.body)
		missing := as("mem-b", rd.method, fmt.Sprintf(rd.path, "sz"), rd.body)
		wantEnvelope(t, "mem-b "+rd.path, existing, 404, "not_found")
		if want := strings.ReplaceAll(string(missing.body), `\"sz\"`, `\"sa\"`); string(existing.body) != want {
			t.Errorf("%s: the answer about tenant a's space differs from the one about no space:\nexisting %s\nmissing  %s", rd.path, existing.body, missing.body)
		}
		if strings.Contains(string(existing.body), "secret") || strings.Contains(string(existing.body), `"a"`) {
			t.Errorf("%s: the answer reveals tenant a's data: %s", rd.path, existing.body)
		}
		wantStatus(t, "read-a "+rd.path, as("read-a", rd.method, fmt.Sprintf(rd.path, "sa"), rd.body), 200)
	}

	writes := []struct {
		who, method, path string
		body              any
	}{
		{"mem-b", http.MethodPost, "/v1/spaces/sa/tasks", map[string]any{"title": "intruder", "delivery_mode": "result"}},
		{"mem-b", http.MethodPost, "/v1/spaces/sa/windows", map[string]any{"proposals": []any{map[string]any{"proposal_id": "p", "title": "intruder", "delivery_mode": "result"}}}},
		{"mem-b", http.MethodPost, "/v1/spaces/sa/reservations", map[string]any{"proposal_id": "p", "title": "intruder", "delivery_mode": "result"}},
		{"mem-b", http.MethodPost, "/v1/spaces/sa/tasks/1/transition", map[string]any{"action": "claim"}},
		{"mem-b", http.MethodPost, "/v1/spaces/sa/tasks/1/notes", note},
		{"mem-b", http.MethodPut, "/v1/spaces/sa", map[string]any{"tenant_ref": "b", "catalog": []any{}}},
		{"read-a", http.MethodPost, "/v1/spaces/sa/tasks", map[string]any{"title": "reader", "delivery_mode": "result"}},
	}
	before := allocationDigest(t, c.Node(c.Leader()))
	for _, w := range writes {
		wantEnvelope(t, w.who+" "+w.method+" "+w.path, as(w.who, w.method, w.path, w.body), 403, "forbidden")
	}
	if allocationDigest(t, c.Node(c.Leader())) != before {
		t.Fatal("refused writes changed the allocation tables")
	}

	// The list of spaces shows each principal its tenants' spaces only.
	listed := func(who string) bool {
		r := as(who, http.MethodGet, "/v1/spaces", nil)
		wantStatus(t, who+" lists spaces", r, 200)
		return strings.Contains(string(r.body), `"slug":"sa"`)
	}
	if !listed("read-a") || listed("mem-b") {
		t.Fatalf("GET /v1/spaces: read-a sees sa %t, mem-b %t", listed("read-a"), listed("mem-b"))
	}

	// A put without tenant_ref keeps tenant a: its members still see it.
	wantStatus(t, "put again", as("ctl-a", http.MethodPut, "/v1/spaces/sa", map[string]any{"catalog": []any{}, "window_ms": 5000}), 200)
	r := as("read-a", http.MethodGet, "/v1/spaces/sa", nil)
	if sp := r.json(t)["space"].(map[string]any); r.status != 200 || sp["tenant_ref"] != "a" || sp["window_ms"] != 5000.0 {
		t.Fatalf("after a put without tenant_ref: %d %s", r.status, r.body)
	}
	// A new space's tenant is its slug.
	wantStatus(t, "mem-b reads a space of no tenant of its", as("mem-b", http.MethodGet, "/v1/spaces/sa", nil), 404)
	c.WaitConverged(20 * time.Second)
}
