package mcptools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/arbiterhq/arbiter/api"
	"github.com/google/jsonschema-go/jsonschema"
)

// Input schemas come from the API's OpenAPI document, the copy checked
// in as api/openapi.json (embedded by package api, which links nothing
// else; a test there keeps it what a node serves). A tool names the
// operation it calls by its operationId, and its input schema is that
// operation's request as one object: its path, query and header
// parameters (each typed as the value it holds: a task id is an
// integer, not the string of the URL) beside its JSON body's
// properties, $refs inlined. What a tool changes of it is declared with
// the tool (type tool): parameters it renames, properties it sets itself
// and so leaves out, properties of its own, and which are required (the
// document names none in a request: the server's decoder refuses
// unknown fields, never missing ones, and each handler checks presence).
// Descriptions, which the document does not carry, are the jsonschema
// tags of the tool's Go input type.

// document is the parts of the OpenAPI document a tool's schema is made
// of: operations by operationId, and the components their $refs name.
type document struct {
	ops     map[string]operation
	schemas map[string]any
}

type operation struct {
	ID         string      `json:"operationId"`
	Parameters []parameter `json:"parameters"`
	Body       *struct {
		Content map[string]struct {
			Schema any `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
}

type parameter struct {
	Name   string         `json:"name"`
	In     string         `json:"in"`
	Schema map[string]any `json:"schema"`
}

// apiDocument is the embedded document, read once.
var apiDocument = sync.OnceValues(func() (*document, error) { return parseDocument(api.OpenAPI) })

func parseDocument(raw []byte) (*document, error) {
	var d struct {
		Paths      map[string]map[string]operation `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("the OpenAPI document: %w", err)
	}
	doc := &document{ops: map[string]operation{}, schemas: d.Components.Schemas}
	for _, ops := range d.Paths {
		for _, op := range ops {
			doc.ops[op.ID] = op
		}
	}
	return doc, nil
}

// request is the request of operation id as one object schema (see the
// comment at the top of this file). Each call answers a new value: the
// caller may change it.
func (d *document) request(id string) (map[string]any, error) {
	op, ok := d.ops[id]
	if !ok {
		return nil, fmt.Errorf("no operation %q in the document", id)
	}
	props := map[string]any{}
	for _, p := range op.Parameters {
		// On the wire a parameter is a string; x-arbiter-value says what
		// it holds, which is what a tool takes.
		s := map[string]any{"type": p.Schema["type"]}
		if v, ok := p.Schema["x-arbiter-value"]; ok {
			s["type"] = v
		}
		if e, ok := p.Schema["enum"]; ok {
			s["enum"] = e
		}
		props[p.Name] = s
	}
	if op.Body != nil {
		body, err := d.inline(op.Body.Content["application/json"].Schema, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		m, _ := body.(map[string]any)
		fields, ok := m["properties"].(map[string]any)
		if m["type"] != "object" || !ok {
			return nil, fmt.Errorf("%s: the request body is not an object of properties", id)
		}
		for name, s := range fields {
			if _, dup := props[name]; dup {
				return nil, fmt.Errorf("%s: %s is both a parameter and a body property", id, name)
			}
			props[name] = s
		}
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}, nil
}

// maxInline bounds how deep $refs are followed: request types nest a few
// levels; a recursive one would not end.
const maxInline = 16

// inline is a copy of s with every $ref replaced by its component.
func (d *document) inline(s any, depth int) (any, error) {
	if depth > maxInline {
		return nil, fmt.Errorf("$refs nested deeper than %d", maxInline)
	}
	switch s := s.(type) {
	case map[string]any:
		if r, ok := s["$ref"].(string); ok {
			name, _ := strings.CutPrefix(r, "#/components/schemas/")
			target, ok := d.schemas[name]
			if !ok {
				return nil, fmt.Errorf("unknown $ref %q", r)
			}
			return d.inline(target, depth+1)
		}
		out := make(map[string]any, len(s))
		for k, v := range s {
			c, err := d.inline(v, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(s))
		for i, v := range s {
			c, err := d.inline(v, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return s, nil
}

// toolSchema is t's input schema: its operation's request, changed as t
// declares, with the descriptions of described (In's inferred schema).
func toolSchema(doc *document, t tool, described *jsonschema.Schema) (*jsonschema.Schema, error) {
	s, err := doc.request(t.op)
	if err != nil {
		return nil, err
	}
	props := s["properties"].(map[string]any)
	for _, from := range slices.Sorted(maps.Keys(t.rename)) {
		p, ok := props[from]
		if !ok {
			return nil, fmt.Errorf("rename: %s has no %s", t.op, from)
		}
		delete(props, from)
		props[t.rename[from]] = p
	}
	for _, path := range t.fills {
		parent, name, err := at(s, path)
		if err != nil {
			return nil, fmt.Errorf("fills: %w", err)
		}
		delete(parent["properties"].(map[string]any), name)
	}
	for _, name := range slices.Sorted(maps.Keys(t.extra)) {
		if _, dup := props[name]; dup {
			return nil, fmt.Errorf("extra: %s already has %s", t.op, name)
		}
		props[name] = t.extra[name]
	}
	for _, path := range t.required {
		parent, name, err := at(s, path)
		if err != nil {
			return nil, fmt.Errorf("required: %w", err)
		}
		req, _ := parent["required"].([]any)
		parent["required"] = append(req, name)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out jsonschema.Schema
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	describe(&out, described, 0)
	return &out, nil
}

// at finds the property a path names ("request.owner_ref", "requests[].kind":
// [] steps into an array's items): the object schema that holds it, and
// its name.
func at(s map[string]any, path string) (map[string]any, string, error) {
	steps := strings.Split(path, ".")
	for _, step := range steps[:len(steps)-1] {
		name, items := strings.CutSuffix(step, "[]")
		next, ok := s["properties"].(map[string]any)[name].(map[string]any)
		if items && ok {
			next, ok = next["items"].(map[string]any)
		}
		if !ok {
			return nil, "", fmt.Errorf("no %s in %s", step, path)
		}
		s = next
	}
	last := steps[len(steps)-1]
	props, _ := s["properties"].(map[string]any)
	if _, ok := props[last]; !ok {
		return nil, "", fmt.Errorf("no property %s", path)
	}
	return s, last, nil
}

// describe copies the descriptions of from onto the same properties (and
// items) of s. Both are trees of a few levels; depth bounds the walk.
func describe(s, from *jsonschema.Schema, depth int) {
	if s == nil || from == nil || depth > maxInline {
		return
	}
	if from.Description != "" {
		s.Description = from.Description
	}
	describeParts(s, from, depth)
}

func describeParts(s, from *jsonschema.Schema, depth int) {
	if depth > maxInline {
		return
	}
	for name, p := range s.Properties {
		describe(p, from.Properties[name], depth+1)
	}
	describe(s.Items, from.Items, depth+1)
	for _, alt := range s.AnyOf { // a nullable object: {anyOf: [object, null]}
		describeParts(alt, from, depth+1)
	}
}
