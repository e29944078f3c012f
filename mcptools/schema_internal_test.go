package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/api"
	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everything is what a cluster of every built-in domain enables.
func everything() Enabled {
	e := Enabled{domains: map[string][]string{}}
	for _, m := range domain.Modules(builtin.Domains()) {
		for _, c := range m.Commands {
			e.domains[m.Name] = append(e.domains[m.Name], c.Name)
		}
	}
	return e
}

// listed is every tool of a server of every domain, as a client lists
// them: name, _meta.operation and the input schema as JSON.
func listed(t *testing.T) []*mcp.Tool {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(everything(), nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// declared is each tool's declaration, by name.
func declared(t *testing.T) map[string]added {
	t.Helper()
	out := map[string]added{}
	for _, a := range register(everything(), nil).added {
		out[a.name] = a
	}
	return out
}

// Every tool names an operation of the document (in its declaration and
// its listing's _meta), and its input schema is that operation's
// request: every property is the document's parameter or body property
// of that name (or the declared renaming of it), with the document's
// schema but for descriptions and required lists; what the tool leaves
// out it declares it fills; what it adds it declares as its own.
func TestToolSchemasAreTheDocuments(t *testing.T) {
	tools, decls := listed(t), declared(t)
	if len(tools) < 33 || len(tools) != len(decls) {
		t.Fatalf("%d tools listed, %d declared: want every tool of every domain (33 or more)", len(tools), len(decls))
	}
	for _, p := range compare(tools, decls, api.OpenAPI) {
		t.Error(p)
	}

	// Could-fail: against a document whose request has lost a property,
	// or gained one, or changed one's type, the tools that use it differ.
	var doc map[string]any
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	delete(schemas["allocation.BindRequest.request"].(map[string]any)["properties"].(map[string]any), "work_item_id")
	schemas["projection.FenceRequest.request"].(map[string]any)["properties"].(map[string]any)["holder"] = map[string]any{"type": "string"}
	schemas["capacity.Demand.request"].(map[string]any)["properties"].(map[string]any)["amount"] = map[string]any{"type": "string"}
	spoiled, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(compare(tools, decls, spoiled), "\n")
	for _, want := range []string{"allocation_bind: work_item_id", "projection_publish: holder", "projection_release: holder", "capacity_acquire: demands"} {
		if !strings.Contains(got, want) {
			t.Errorf("against a spoiled document, no difference %q; got:\n%s", want, got)
		}
	}
}

// compare lists how the tools' input schemas differ from the requests of
// their operations in doc.
func compare(tools []*mcp.Tool, decls map[string]added, doc []byte) []string {
	var d struct {
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return []string{err.Error()}
	}
	ops := map[string]map[string]any{}
	for _, byMethod := range d.Paths {
		for _, op := range byMethod {
			ops[op["operationId"].(string)] = op
		}
	}
	var out []string
	for _, tl := range tools {
		decl, ok := decls[tl.Name]
		if !ok {
			out = append(out, tl.Name+": listed, not declared")
			continue
		}
		if tl.Meta["operation"] != decl.op {
			out = append(out, fmt.Sprintf("%s: _meta.operation %v, declared %s", tl.Name, tl.Meta["operation"], decl.op))
		}
		op, ok := ops[decl.op]
		if !ok {
			out = append(out, fmt.Sprintf("%s: operation %q is not in the document", tl.Name, decl.op))
			continue
		}
		want := requestOf(op, d.Components.Schemas)
		for _, path := range decl.fills {
			if !remove(want, strings.Split(path, ".")) {
				out = append(out, fmt.Sprintf("%s: fills %s, which %s's request does not have", tl.Name, path, decl.op))
			}
		}
		var input map[string]any
		raw, _ := json.Marshal(tl.InputSchema)
		_ = json.Unmarshal(raw, &input)
		props, _ := input["properties"].(map[string]any)
		if input["type"] != "object" || input["additionalProperties"] != false {
			out = append(out, fmt.Sprintf("%s: the input is not a closed object: %s", tl.Name, raw))
		}
		for name, p := range props {
			if _, own := decl.extra[name]; own {
				continue
			}
			apiName := name
			for from, to := range decl.rename {
				if to == name {
					apiName = from
				}
			}
			w, ok := want[apiName]
			if !ok {
				out = append(out, fmt.Sprintf("%s: %s is not in %s's request, nor declared the tool's own", tl.Name, name, decl.op))
				continue
			}
			if g, w := canonical(p), canonical(w); g != w {
				out = append(out, fmt.Sprintf("%s: %s is %s, the document's %s", tl.Name, name, g, w))
			}
			delete(want, apiName)
		}
		for name := range want {
			out = append(out, fmt.Sprintf("%s: %s of %s's request is neither an input nor declared filled", tl.Name, name, decl.op))
		}
	}
	slices.Sort(out)
	return out
}

// requestOf is op's parameters (typed as the values they hold) and body
// properties, by name, $refs resolved.
func requestOf(op map[string]any, schemas map[string]any) map[string]any {
	out := map[string]any{}
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		p := p.(map[string]any)
		s := p["schema"].(map[string]any)
		v := map[string]any{"type": s["type"]}
		if x, ok := s["x-arbiter-value"]; ok {
			v["type"] = x
		}
		if e, ok := s["enum"]; ok {
			v["enum"] = e
		}
		out[p["name"].(string)] = v
	}
	if body, ok := op["requestBody"].(map[string]any); ok {
		s := resolve(body["content"].(map[string]any)["application/json"].(map[string]any)["schema"], schemas, 0)
		for name, p := range s.(map[string]any)["properties"].(map[string]any) {
			out[name] = p
		}
	}
	return out
}

func resolve(s any, schemas map[string]any, depth int) any {
	if depth > 32 { // deeper than any request nests: stop (the comparison then fails)
		return "too deep"
	}
	switch s := s.(type) {
	case map[string]any:
		if r, ok := s["$ref"].(string); ok {
			return resolve(schemas[strings.TrimPrefix(r, "#/components/schemas/")], schemas, depth+1)
		}
		out := map[string]any{}
		for k, v := range s {
			out[k] = resolve(v, schemas, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = resolve(v, schemas, depth+1)
		}
		return out
	}
	return s
}

// remove deletes the property at path ("request", "owner_ref"; "x[]"
// steps into items) from props, reporting whether it was there.
func remove(props map[string]any, path []string) bool {
	if len(path) == 1 {
		_, ok := props[path[0]]
		delete(props, path[0])
		return ok
	}
	name, items := strings.CutSuffix(path[0], "[]")
	s, _ := props[name].(map[string]any)
	if items {
		s, _ = s["items"].(map[string]any)
	}
	next, ok := s["properties"].(map[string]any)
	return ok && remove(next, path[1:])
}

// canonical is s as JSON without what a tool adds to the document's
// schema (descriptions, required lists), with type lists sorted and the
// schema true written {} (the SDK writes an empty schema as true).
func canonical(s any) string {
	var strip func(any) any
	strip = func(v any) any {
		switch v := v.(type) {
		case bool:
			if v {
				return map[string]any{}
			}
			return v
		case map[string]any:
			out := map[string]any{}
			for k, x := range v {
				switch k {
				case "description", "required":
				case "type":
					if l, ok := x.([]any); ok {
						ts := make([]string, len(l))
						for i, t := range l {
							ts[i], _ = t.(string)
						}
						slices.Sort(ts)
						x = ts
					}
					out[k] = x
				default:
					out[k] = strip(x)
				}
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = strip(x)
			}
			return out
		}
		return v
	}
	b, _ := json.Marshal(strip(s))
	return string(b)
}

// Each tool's Go input type holds exactly its schema's properties, at
// every level, of the same types: arguments that pass the schema lose
// nothing when decoded (decode also refuses a field the type lacks),
// and the type's jsonschema tags describe the right properties.
func TestToolInputsHoldTheirSchemas(t *testing.T) {
	for name, a := range declared(t) {
		for _, p := range sameShape(a.schema, inferredOf(t, a.input), "") {
			t.Errorf("%s (input %v): %s", name, a.input, p)
		}
	}
	// Could-fail: a type without one of the schema's properties, or with
	// another type, differs.
	type narrow struct {
		TargetID string `json:"target_id"`
		Token    uint64 `json:"token"`
	}
	a := declared(t)["projection_publish"]
	if got := sameShape(a.schema, inferredOf(t, reflect.TypeFor[narrow]()), ""); len(got) != 2 {
		t.Errorf("a narrower input type: %v, want fencing_epoch missing and token's type", got)
	}
}

func inferredOf(t *testing.T, ty reflect.Type) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.ForType(ty, &jsonschema.ForOptions{TypeSchemas: rawSchemas})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameShape lists where s and g differ in property names or types
// (nullability aside: Go's nil is JSON's null either way).
func sameShape(s, g *jsonschema.Schema, at string) []string {
	if s == nil || g == nil || len(at) > 200 { // a path that long is a cycle: stop
		return nil
	}
	var out []string
	if ts, tg := kinds(s), kinds(g); ts != "" && tg != "" && ts != tg {
		out = append(out, fmt.Sprintf("%s: %s in the schema, %s in the type", at, ts, tg))
	}
	for name, p := range s.Properties {
		q, ok := g.Properties[name]
		if !ok {
			out = append(out, fmt.Sprintf("%s%s: not in the type", at, name))
			continue
		}
		out = append(out, sameShape(p, q, at+name+".")...)
	}
	for name := range g.Properties {
		if _, ok := s.Properties[name]; !ok {
			out = append(out, fmt.Sprintf("%s%s: in the type, not in the schema", at, name))
		}
	}
	return append(out, sameShape(s.Items, g.Items, at+"[].")...)
}

func kinds(s *jsonschema.Schema) string {
	ts := slices.DeleteFunc(append([]string{s.Type}, s.Types...), func(t string) bool { return t == "" || t == "null" })
	slices.Sort(ts)
	return strings.Join(ts, ",")
}

// A tool declared without an operation (as tools were before their
// schemas came from the document) still serves, with its Go input
// type's schema, and the comparison with the document names it.
func TestAToolWithoutOperation(t *testing.T) {
	r := &registrar{s: mcp.NewServer(&mcp.Implementation{Name: "test"}, nil), enabled: everything()}
	add(r, tool{name: "legacy_get", domain: "nodes", readOnly: true, required: []string{"node_id"}, description: "a tool of the old pattern"},
		func(context.Context, *client.Client, nodeRef) (any, error) { return nil, nil })
	if len(r.added) != 1 || r.added[0].schema.Properties["node_id"] == nil || !slices.Equal(r.added[0].schema.Required, []string{"node_id"}) {
		t.Fatalf("the tool without an operation: %+v", r.added)
	}
	tl := &mcp.Tool{Name: "legacy_get", InputSchema: r.added[0].schema}
	got := compare([]*mcp.Tool{tl}, map[string]added{"legacy_get": r.added[0]}, api.OpenAPI)
	if !slices.Contains(got, `legacy_get: operation "" is not in the document`) {
		t.Fatalf("compare: %v", got)
	}
}
