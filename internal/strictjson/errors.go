package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// FieldError is a decoding error about one field of the body: Field is
// its JSON path ("labels", "cell.capacities"), Unknown says the body has
// a field the request does not. Its message is the API's (see describe).
type FieldError struct {
	Field   string
	Unknown bool
	msg     string
}

func (e *FieldError) Error() string { return e.msg }

// describe turns an encoding/json error into one in the API's terms:
// JSON paths and JSON types, never Go struct or type names.
func describe(err error, v any) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return typeError(typeErr, reflect.TypeOf(v))
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("invalid JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("the JSON value is incomplete")
	}
	// Unknown fields (`json: unknown field "x"`) and the errors of types
	// that decode themselves already speak of JSON.
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, `unknown field "`); ok {
		return &FieldError{Field: strings.TrimSuffix(name, `"`), Unknown: true, msg: msg}
	}
	return errors.New(msg)
}

// typeError says which field holds what, and what it needs. The decoder
// reports the Go type it was filling, which for an element of an array or
// an object is the element's: the field's own declared type, found by
// walking the path through the target, gives the whole picture.
func typeError(e *json.UnmarshalTypeError, target reflect.Type) error {
	got := gotValue(e.Value)
	if e.Field == "" {
		return fmt.Errorf("the body must be %s, not %s", jsonType(e.Type), got)
	}
	declared, field := fieldType(target, e.Field)
	if declared == nil || deref(declared) == deref(e.Type) {
		return &FieldError{Field: field, msg: fmt.Sprintf("%s: want %s, got %s", field, jsonType(e.Type), got)}
	}
	return &FieldError{Field: field, msg: fmt.Sprintf("%s: want %s, got %s inside it", field, jsonType(declared), got)}
}

// gotValue describes what the decoder met: "string", "number", "number
// -1", "array", "object", "bool".
func gotValue(v string) string {
	switch {
	case v == "bool":
		return "a boolean"
	case v == "array", v == "object":
		return "an " + v
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "":
		return "a value of another type"
	}
	return "a " + v
}

var (
	numberType     = reflect.TypeFor[json.Number]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	unmarshaler    = reflect.TypeFor[json.Unmarshaler]()
)

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonType names the JSON a Go type accepts: "a string", "an array of
// non-negative integers", ...
func jsonType(t reflect.Type) string {
	one, _ := jsonTypes(t, 0)
	return one
}

// jsonTypes is the singular and plural description of t.
func jsonTypes(t reflect.Type, depth int) (one, many string) {
	t = deref(t)
	if t == nil || depth > 4 {
		return "a JSON value", "JSON values"
	}
	switch t {
	case numberType:
		return "a number", "numbers"
	case rawMessageType:
		return "a JSON value", "JSON values"
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return "a JSON value", "JSON values"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string", "strings"
	case reflect.Bool:
		return "true or false", "booleans"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer", "integers"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer", "non-negative integers"
	case reflect.Float32, reflect.Float64:
		return "a number", "numbers"
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string", "base64 strings"
		}
		_, elems := jsonTypes(t.Elem(), depth+1)
		return "an array of " + elems, "arrays of " + elems
	case reflect.Map:
		_, elems := jsonTypes(t.Elem(), depth+1)
		return "an object of " + elems, "objects of " + elems
	case reflect.Struct:
		return "an object", "objects"
	case reflect.Interface:
		return "a JSON value", "JSON values"
	}
	return "a JSON value", "JSON values"
}

// fieldType follows a dotted path of field names from t (through
// pointers, and through the elements of arrays and maps, which the path
// does not name) and returns the declared type of its last field and the
// path in JSON names only: the decoder's path also names embedded structs
// by their Go names ("TimeFields.due"), which a caller never sent.
func fieldType(t reflect.Type, path string) (reflect.Type, string) {
	cur := t
	var names []string
	for _, name := range strings.Split(path, ".") {
		s := structOf(cur)
		if s == nil {
			return nil, path
		}
		if f, ok := jsonField(s, name, 0); ok {
			cur = f
			names = append(names, name)
			continue
		}
		if f, ok := s.FieldByName(name); ok && f.Anonymous {
			cur = f.Type // an embedded struct the decoder named
			continue
		}
		return nil, path
	}
	return cur, strings.Join(names, ".")
}

// structOf is the struct a value of t holds fields of: t itself, or the
// element of its pointers, arrays and maps.
func structOf(t reflect.Type) reflect.Type {
	for i := 0; t != nil && i < 8; i++ {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return t
		default:
			return nil
		}
	}
	return nil
}

// jsonField finds the field encoding/json decodes name into, including
// the fields of embedded structs it promotes.
func jsonField(t reflect.Type, name string, depth int) (reflect.Type, bool) {
	if depth > 4 {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		tagName, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && tagName == "" {
			if inner := deref(f.Type); inner.Kind() == reflect.Struct {
				if ft, ok := jsonField(inner, name, depth+1); ok {
					return ft, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if tagName == "" {
			tagName = f.Name
		}
		if tagName == name || strings.EqualFold(tagName, name) {
			return f.Type, true
		}
	}
	return nil, false
}
