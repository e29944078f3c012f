package openapi

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/domain"
)

// Path is where the document is served.
const Path = "/v1/openapi.json"

// Route serves the document of the routes routes lists (called once, at
// the first request, when the route table is complete): GET
// /v1/openapi.json for any authenticated caller, as every other /v1 route.
func Route(routes func() []domain.Route) domain.Route {
	var once sync.Once
	var doc json.RawMessage
	var err error
	return domain.Endpoint[struct{}, json.RawMessage]{Method: http.MethodGet, Path: Path, Access: domain.Authenticated,
		Call: func(context.Context, struct{}) (*json.RawMessage, error) {
			once.Do(func() { doc, err = Document(routes()) })
			if err != nil {
				return nil, err
			}
			return &doc, nil
		}}.Route()
}

// ErrorEnvelope is the component every failure's body refers to:
// {"error": {"code", "message", "detail"}} (see domain.WriteError).
const ErrorEnvelope = "Error"

// Document is the OpenAPI 3.1 document of routes.
func Document(routes []domain.Route) ([]byte, error) {
	g := &generator{schemas: map[string]any{}, names: map[reflect.Type]string{}}
	g.schemas[ErrorEnvelope] = map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"error"},
		"properties": map[string]any{"error": map[string]any{
			"type": "object", "additionalProperties": false, "required": []string{"code", "message"},
			"properties": map[string]any{
				"code":            map[string]any{"type": "string"},
				"message":         map[string]any{"type": "string"},
				"detail":          map[string]any{"type": "object"},
				"outcome_unknown": map[string]any{"type": "boolean"},
			},
		}},
	}
	paths := map[string]map[string]any{}
	for _, r := range routes {
		ops := paths[r.Path]
		if ops == nil {
			ops = map[string]any{}
			paths[r.Path] = ops
		}
		m := strings.ToLower(r.Method)
		if _, dup := ops[m]; dup {
			return nil, fmt.Errorf("openapi: route %s listed twice", r.Pattern())
		}
		ops[m] = g.operation(r)
	}
	return json.Marshal(map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Arbiter HTTP API", "version": "v1",
			"description": "Generated from the route table. x-arbiter-access is what a route asks of its caller: public, authenticated, admin or peer."},
		"paths":      paths,
		"components": map[string]any{"schemas": g.schemas},
	})
}

var accessNames = map[domain.Access]string{domain.Public: "public", domain.Authenticated: "authenticated", domain.Admin: "admin", domain.Peer: "peer"}

func (g *generator) operation(r domain.Route) map[string]any {
	errRef := map[string]any{"description": "the error envelope", "content": jsonContent(ref(ErrorEnvelope))}
	op := map[string]any{
		"operationId":      operationID(r.Method, r.Path),
		"x-arbiter-access": accessNames[r.Access],
	}
	responses := map[string]any{"default": errRef}
	op["responses"] = responses
	var params []any
	if r.API == nil {
		// A hand-written handler: its path wildcards are all it declares.
		for _, seg := range strings.Split(r.Path, "/") {
			if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
				params = append(params, map[string]any{"name": seg[1 : len(seg)-1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
			}
		}
		responses["200"] = map[string]any{"description": "success (not described here)"}
	} else {
		a := r.API
		for _, p := range a.Params {
			s := map[string]any{"type": p.Type}
			if p.Type != "string" {
				s = map[string]any{"type": "string", "x-arbiter-value": p.Type} // on the wire a string; what it holds
			}
			if len(p.Enum) > 0 {
				s["enum"] = p.Enum
			}
			params = append(params, map[string]any{"name": p.Name, "in": p.In, "required": p.In == "path", "schema": s})
		}
		if a.Body != nil {
			op["requestBody"] = map[string]any{"required": true, "content": jsonContent(g.schema(a.Body)),
				"x-arbiter-max-bytes": a.MaxBody}
		}
		for _, st := range a.Statuses {
			responses[strconv.Itoa(st)] = map[string]any{"description": http.StatusText(st), "content": jsonContent(g.schema(a.Result))}
		}
		codes := make([]int, 0, len(a.ErrorBodies))
		for st := range a.ErrorBodies {
			codes = append(codes, st)
		}
		slices.Sort(codes) // the document is the same every time
		for _, st := range codes {
			responses[strconv.Itoa(st)] = map[string]any{"description": http.StatusText(st) + " (this route's own body)", "content": jsonContent(g.schema(a.ErrorBodies[st]))}
		}
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	return op
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

var nonID = regexp.MustCompile(`[^a-z0-9]+`)

func operationID(method, path string) string {
	return strings.ToLower(method) + "_" + strings.Trim(nonID.ReplaceAllString(strings.ToLower(path), "_"), "_")
}

// generator turns Go types into schemas, named types into components.
type generator struct {
	schemas map[string]any
	names   map[reflect.Type]string
}

var (
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessage    = reflect.TypeFor[json.RawMessage]()
	jsonNumber    = reflect.TypeFor[json.Number]()
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// schema is t's schema: a $ref for a named struct, inline otherwise.
func (g *generator) schema(t reflect.Type) any {
	switch {
	case t == rawMessage:
		return map[string]any{}
	case t == jsonNumber:
		return map[string]any{"type": "number"}
	case t.Kind() == reflect.Pointer:
		return nullable(g.schema(t.Elem()))
	case t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler):
		return map[string]any{}
	case t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": []string{"string", "null"}, "contentEncoding": "base64"}
		}
		return map[string]any{"type": []string{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		if name, ok := g.names[t]; ok {
			return ref(name)
		}
		name := unsafeName.ReplaceAllString(t.String(), "_")
		for n := 2; g.schemas[name] != nil; n++ { // two types of one name (generic instances)
			name = fmt.Sprintf("%s_%d", unsafeName.ReplaceAllString(t.String(), "_"), n)
		}
		g.names[t] = name
		g.schemas[name] = map[string]any{} // taken, for recursive types
		g.schemas[name] = g.object(t)
		return ref(name)
	}
	return map[string]any{} // interfaces: any JSON value
}

// object is a struct's schema, as encoding/json writes it.
func (g *generator) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required, 0)
	slices.Sort(required)
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// maxEmbedding bounds how deep embedded structs are flattened.
const maxEmbedding = 8

func (g *generator) fields(t reflect.Type, props map[string]any, required *[]string, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && depth < maxEmbedding {
				g.fields(et, props, required, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		var s any
		if slices.Contains(strings.Split(opts, ","), "string") {
			s = map[string]any{"type": "string"}
		} else {
			s = g.schema(ft)
		}
		props[name] = s
		if !slices.Contains(strings.Split(opts, ","), "omitempty") && !slices.Contains(strings.Split(opts, ","), "omitzero") {
			*required = append(*required, name)
		}
	}
}

// nullable is s or null.
func nullable(s any) any {
	if m, ok := s.(map[string]any); ok {
		switch ty := m["type"].(type) {
		case string:
			out := maps(m)
			out["type"] = []string{ty, "null"}
			return out
		case []string:
			return m // already takes null
		}
		if len(m) == 0 {
			return m // anything, null included
		}
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
