package domain

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// Endpoint is the one HTTP adapter of the domains: a typed route. Its
// handler binds the request Req, calls Call and answers the result with
// the status Status gives, or the error through Errors.
//
// Req binds the request by struct tags on its top-level fields, read once
// when the route is built:
//
//   - `path:"name"` (string): the path's "{name}" segment; every wildcard
//     of Path must be bound;
//   - `query:"name"` (string, or fsm.Consistency parsed as
//     Params.Consistency does): a query parameter, at most once; any
//     other query parameter is refused;
//   - `header:"Name"` ([]string): every value of the header, checked by
//     Call;
//   - `body:""`: the JSON body, decoded strictly.
//
// A Req without any of these tags is the JSON body itself. A route whose
// Req has tags but no body field reads no body on GET and accepts only no
// body, an empty one or {} otherwise. The tag `type:"integer"` or
// `type:"boolean"` on a path or query field only tells the API document
// what the string holds; Call parses it. Binding goes body, query, path,
// header, so the first error a request meets is the same as before the
// adapter was shared.
type Endpoint[Req, Res any] struct {
	Method string
	Path   string
	Access Access
	Call   func(context.Context, Req) (*Res, error)
	// Status is the status of a success (nil: 200); Statuses lists every
	// status it answers, for the API document (required with Status).
	Status   func(*Res) int
	Statuses []int
	// MaxBody bounds the body (0: MaxBodyBytes); beyond it: 413.
	MaxBody int64
	// DecodeError is the error of a body that does not decode (nil:
	// invalid, "malformed JSON body: ...").
	DecodeError func(error) error
	// Errors answers a failure (nil: the error envelope of WriteError).
	Errors *ErrorEncoder
}

// ErrorEncoder answers a route's failures that are not the standard
// envelope, declared once per route.
type ErrorEncoder struct {
	// Encode writes the answer of err and reports true, or reports false
	// and leaves it to the envelope. result is what the call returned
	// with the error (nil if nothing).
	Encode func(w http.ResponseWriter, result any, err error) bool
	// Bodies are the Go types of the bodies Encode writes, by status,
	// for the API document.
	Bodies map[int]reflect.Type
}

// ResultInDetail is the encoder of denials that explain themselves: a
// failure that comes with a result (such as a capacity decision) carries
// it in error.detail.result, beside detail.decision.
var ResultInDetail = &ErrorEncoder{Encode: func(w http.ResponseWriter, result any, err error) bool {
	if e := errs.From(err); result != nil && e.Detail != nil {
		detailed := *e
		detailed.Detail = map[string]any{"decision": e.Detail["decision"], "result": result}
		err = &detailed
	}
	WriteError(w, err)
	return true
}}

// API is what a route built by Endpoint tells the API document.
type API struct {
	Request reflect.Type // Req
	Result  reflect.Type // Res
	Body    reflect.Type // the JSON body's type; nil: none
	Params  []Param
	// Statuses of a success; MaxBody bounds the body.
	Statuses []int
	MaxBody  int64
	// ErrorBodies are the bodies other than the envelope, by status.
	ErrorBodies map[int]reflect.Type
}

// Param is one bound path, query or header parameter.
type Param struct {
	Name string
	In   string // path, query or header
	// Type is the JSON Schema type of its value: string, integer or
	// boolean; Enum its values when they are few.
	Type string
	Enum []string
}

// Route builds the route. A malformed Req binding panics: routes are
// built at start, and a route that cannot bind is a programming error.
func (e Endpoint[Req, Res]) Route() Route {
	b, err := newBinding(reflect.TypeFor[Req](), e.Method, e.Path)
	if err != nil {
		panic(fmt.Sprintf("route %s %s: %v", e.Method, e.Path, err))
	}
	if e.Status != nil && len(e.Statuses) == 0 {
		panic(fmt.Sprintf("route %s %s: a Status func needs its Statuses declared", e.Method, e.Path))
	}
	statuses := e.Statuses
	if len(statuses) == 0 {
		statuses = []int{http.StatusOK}
	}
	limit := e.MaxBody
	if limit == 0 {
		limit = MaxBodyBytes
	}
	decodeErr := e.DecodeError
	if decodeErr == nil {
		decodeErr = malformed
	}
	api := &API{Request: reflect.TypeFor[Req](), Result: reflect.TypeFor[Res](), Body: b.bodyType, Params: b.params(),
		Statuses: statuses, MaxBody: limit}
	if e.Errors != nil {
		api.ErrorBodies = e.Errors.Bodies
	}
	call, status, encoder := e.Call, e.Status, e.Errors
	fail := func(w http.ResponseWriter, result any, err error) {
		if encoder == nil || !encoder.Encode(w, result, err) {
			WriteError(w, err)
		}
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := b.bind(w, r, &req, limit, decodeErr); err != nil {
			fail(w, nil, err)
			return
		}
		res, err := call(r.Context(), req)
		if err != nil {
			var result any
			if res != nil {
				result = res
			}
			fail(w, result, err)
			return
		}
		code := http.StatusOK
		if status != nil {
			code = status(res)
		}
		WriteJSON(w, code, res)
	})
	return Route{Method: e.Method, Path: e.Path, Access: e.Access, Handler: h, API: api}
}

// Post is a POST route whose Req is its JSON body, answered 200, with a
// result that explains a failure in error.detail.result (ResultInDetail).
func Post[Req, Res any](path string, access Access, call func(context.Context, Req) (*Res, error)) Route {
	return Endpoint[Req, Res]{Method: http.MethodPost, Path: path, Access: access, Call: call, Errors: ResultInDetail}.Route()
}

// malformed is the default error of a body that does not decode.
func malformed(err error) error {
	return errs.Errorf(errs.CodeInvalid, "malformed JSON body: %v", err)
}

// binding is how a Req is bound, worked out once from its tags.
type binding struct {
	method    string
	whole     bool  // Req is the body
	body      []int // index of the body field; nil: none
	bodyType  reflect.Type
	query     []field
	queryKeys []string
	path      []field
	header    []field
}

type field struct {
	index []int
	param Param
	kind  int // kindString, kindConsistency, kindStrings
}

const (
	kindString = iota
	kindConsistency
	kindStrings
)

var (
	stringType      = reflect.TypeFor[string]()
	stringsType     = reflect.TypeFor[[]string]()
	consistencyType = reflect.TypeFor[fsm.Consistency]()
)

func newBinding(t reflect.Type, method, path string) (*binding, error) {
	b := &binding{method: method}
	if bindsAny(t) {
		for i := range t.NumField() {
			f := t.Field(i)
			if err := b.add(f); err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	}
	if b.body == nil && len(b.query)+len(b.path)+len(b.header) == 0 {
		b.whole = true
	}
	switch {
	case b.whole && method != http.MethodGet:
		b.bodyType = t
	case b.whole:
		b.whole = false // a GET reads no body
	case b.body != nil:
		b.bodyType = t.FieldByIndex(b.body).Type
	}
	var bound []string
	for _, f := range b.path {
		bound = append(bound, f.param.Name)
	}
	want := wildcards(path)
	slices.Sort(bound)
	slices.Sort(want)
	if !slices.Equal(bound, want) {
		return nil, fmt.Errorf("path fields %v, want one for each wildcard %v", bound, want)
	}
	return b, nil
}

// bindsAny reports whether a field of t has a binding tag; a Req without
// one is its body.
func bindsAny(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		for _, tag := range []string{"path", "query", "header", "body"} {
			if _, ok := t.Field(i).Tag.Lookup(tag); ok {
				return true
			}
		}
	}
	return false
}

func (b *binding) add(f reflect.StructField) error {
	typ := f.Tag.Get("type")
	switch typ {
	case "", "string", "integer", "boolean":
	default:
		return fmt.Errorf("type %q: want string, integer or boolean", typ)
	}
	if typ == "" {
		typ = "string"
	}
	if _, ok := f.Tag.Lookup("body"); ok {
		if b.body != nil {
			return fmt.Errorf("a second body")
		}
		b.body = f.Index
		return nil
	}
	if name, ok := f.Tag.Lookup("path"); ok {
		if f.Type != stringType {
			return fmt.Errorf("a path value is a string")
		}
		b.path = append(b.path, field{index: f.Index, param: Param{Name: name, In: "path", Type: typ}})
		return nil
	}
	if name, ok := f.Tag.Lookup("query"); ok {
		p := field{index: f.Index, param: Param{Name: name, In: "query", Type: typ}}
		switch f.Type {
		case stringType:
		case consistencyType:
			if name != "consistency" {
				return fmt.Errorf("an fsm.Consistency is the query parameter consistency")
			}
			p.kind, p.param.Enum = kindConsistency, []string{"linearizable", "stale"}
		default:
			return fmt.Errorf("a query value is a string or an fsm.Consistency")
		}
		b.query = append(b.query, p)
		b.queryKeys = append(b.queryKeys, name)
		return nil
	}
	if name, ok := f.Tag.Lookup("header"); ok {
		if f.Type != stringsType {
			return fmt.Errorf("a header's values are a []string")
		}
		b.header = append(b.header, field{index: f.Index, param: Param{Name: name, In: "header", Type: typ}, kind: kindStrings})
		return nil
	}
	return fmt.Errorf("not bound: tag it path, query, header or body")
}

func (b *binding) params() []Param {
	var out []Param
	for _, fs := range [][]field{b.path, b.query, b.header} {
		for _, f := range fs {
			out = append(out, f.param)
		}
	}
	return out
}

// bind fills req from r: body, query, path, header.
func (b *binding) bind(w http.ResponseWriter, r *http.Request, req any, limit int64, decodeErr func(error) error) error {
	if b.whole { // the hot routes: no reflection
		body, err := ReadBody(w, r, limit)
		if err != nil {
			return err
		}
		if err := strictjson.Decode(body, req); err != nil {
			return decodeErr(err)
		}
		return nil
	}
	v := reflect.ValueOf(req).Elem()
	switch {
	case b.body != nil:
		body, err := ReadBody(w, r, limit)
		if err != nil {
			return err
		}
		if err := strictjson.Decode(body, v.FieldByIndex(b.body).Addr().Interface()); err != nil {
			return decodeErr(err)
		}
	case b.method != http.MethodGet:
		// No body, an empty one or {}.
		body, err := ReadBody(w, r, limit)
		if err != nil {
			return err
		}
		if len(body) == 0 {
			break
		}
		var none struct{}
		if err := strictjson.Decode(body, &none); err != nil {
			return decodeErr(err)
		}
	}
	if b.method == http.MethodGet || len(b.query) > 0 { // other routes never looked at the query
		p, err := ParseParams(r, b.queryKeys...)
		if err != nil {
			return err
		}
		for _, f := range b.query {
			if f.kind == kindConsistency {
				c, err := p.Consistency()
				if err != nil {
					return err
				}
				v.FieldByIndex(f.index).Set(reflect.ValueOf(c))
				continue
			}
			v.FieldByIndex(f.index).SetString(p.String(f.param.Name))
		}
	}
	for _, f := range b.path {
		v.FieldByIndex(f.index).SetString(r.PathValue(f.param.Name))
	}
	for _, f := range b.header {
		v.FieldByIndex(f.index).Set(reflect.ValueOf(r.Header.Values(f.param.Name)))
	}
	return nil
}
