package openapi

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Validator checks JSON values against the schemas of a document: the
// subset of JSON Schema this package writes (type, one or a list;
// properties, required, additionalProperties; items; enum; minimum;
// anyOf; $ref to #/components/schemas; format int64).
type Validator struct {
	schemas map[string]any
}

// NewValidator reads the components of doc.
func NewValidator(doc []byte) (*Validator, error) {
	var d struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	return &Validator{schemas: d.Components.Schemas}, nil
}

// maxDepth bounds the nesting the validator follows (values and $refs).
const maxDepth = 64

// Validate checks value, a JSON text, against schema (a decoded schema
// object of the document). The error names the first place that fails.
func (v *Validator) Validate(schema any, value []byte) error {
	dec := json.NewDecoder(strings.NewReader(string(value)))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return v.check(schema, x, "$", 0)
}

func (v *Validator) check(schema, x any, at string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: nested deeper than %d", at, maxDepth)
	}
	s, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is not an object", at)
	}
	if r, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(r, "#/components/schemas/")
		target, known := v.schemas[name]
		if !found || !known {
			return fmt.Errorf("%s: unknown $ref %q", at, r)
		}
		return v.check(target, x, at, depth+1)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, alt := range alts {
			err := v.check(alt, x, at, depth+1)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: matches none of anyOf: %s", at, strings.Join(errs, "; "))
	}
	if ty, ok := s["type"]; ok {
		var types []string
		switch ty := ty.(type) {
		case string:
			types = []string{ty}
		case []any:
			for _, t := range ty {
				if t, ok := t.(string); ok {
					types = append(types, t)
				}
			}
		}
		if got := jsonType(x); !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
			return fmt.Errorf("%s: %s, want %s", at, got, strings.Join(types, " or "))
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(x) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, x, enum)
	}
	switch x := x.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return fmt.Errorf("%s: %v", at, err)
		}
		if min, ok := s["minimum"].(float64); ok && f < min {
			return fmt.Errorf("%s: %s is below %v", at, x, min)
		}
		if s["format"] == "int64" && (f != math.Trunc(f) || math.Abs(f) > 1<<63) {
			return fmt.Errorf("%s: %s is not an int64", at, x)
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, e := range x {
				if err := v.check(items, e, fmt.Sprintf("%s[%d]", at, i), depth+1); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if name, _ := r.(string); name != "" {
				if _, ok := x[name]; !ok {
					return fmt.Errorf("%s: %s is required", at, name)
				}
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the first error is the same every time
		for _, k := range keys {
			sub, declared := props[k]
			if !declared {
				switch extra := s["additionalProperties"].(type) {
				case bool:
					if !extra {
						return fmt.Errorf("%s: %s is not a property", at, k)
					}
					continue
				case map[string]any:
					sub = extra
				default:
					continue
				}
			}
			if err := v.check(sub, x[k], at+"."+k, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonType is the JSON Schema type of a decoded value.
func jsonType(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil || !strings.ContainsAny(string(x), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}
