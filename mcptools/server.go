package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the server's version in the MCP handshake.
const Version = "0.1"

// Source is the cluster client a call speaks through. The stdio server
// has one client for its whole life (its credential is the process's);
// the /mcp endpoint builds one per HTTP request, with that request's
// credential (extra carries its header).
type Source func(ctx context.Context, extra *mcp.RequestExtra) (*client.Client, error)

// Fixed is the Source of one client for every call.
func Fixed(c *client.Client) Source {
	return func(context.Context, *mcp.RequestExtra) (*client.Client, error) { return c, nil }
}

// Enabled is the set of commands the cluster enables, by domain: what
// decides which tools and resources a server offers.
type Enabled struct {
	domains map[string][]string
}

// EnabledOf reads what the cluster enables (its capabilities, asked
// through c). A cluster whose state is not gated yet applies every
// command its binary serves, so then the answering node's served set
// counts.
func EnabledOf(ctx context.Context, c *client.Client) (Enabled, error) {
	caps, err := c.Cluster().Capabilities(ctx, client.Linearizable)
	if err != nil {
		return Enabled{}, err
	}
	set := caps.Enabled
	if !caps.Gated {
		set = caps.Served
	}
	return enabledFrom(set), nil
}

func enabledFrom(set client.Capabilities) Enabled {
	e := Enabled{domains: map[string][]string{}}
	for _, d := range set.Domains {
		for _, c := range d.Commands {
			e.domains[d.Name] = append(e.domains[d.Name], c.Name)
		}
	}
	return e
}

// Has reports whether the domain has commands enabled, and every one of
// commands among them.
func (e Enabled) Has(domain string, commands ...string) bool {
	have, ok := e.domains[domain]
	if !ok {
		return false
	}
	for _, c := range commands {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

// New returns an MCP server whose tools and resources are those of the
// domains enabled (see the package doc), each call made through the
// client src gives.
func New(enabled Enabled, src Source) *mcp.Server {
	return register(enabled, src).s
}

// register builds the server, with the list of what it added.
func register(enabled Enabled, src Source) *registrar {
	s := mcp.NewServer(&mcp.Implementation{Name: "arbiter", Title: "Arbiter", Version: Version},
		&mcp.ServerOptions{Instructions: instructions})
	r := &registrar{s: s, src: src, enabled: enabled}
	r.allocation()
	r.concepts()
	r.capacity()
	r.workItems()
	r.projection()
	r.nodes()
	r.resources()
	return r
}

// instructions is what the server tells an agent host about itself.
const instructions = `Arbiter decides who got there first, replicated by Raft. Each tool is one call of the cluster's HTTP API, made with this server's credential: its result is the API's JSON body; a refusal is a tool error whose content is the API's error body ({"error":{"code","message","detail"}}, or allocation's flat {"error":"allocation_conflict","code","winner",...}). A refusal changed nothing; read its code before retrying.`

// registrar adds the tools of the enabled domains to a server.
type registrar struct {
	s       *mcp.Server
	src     Source
	enabled Enabled
	added   []added // the tools added, in order
}

// tool describes one tool: its name, what an agent reads of it, the
// command the cluster must enable for it (or only its domain for reads),
// and the API operation whose request is its input (schema.go).
type tool struct {
	name, description string
	domain            string
	commands          []string
	// op is the operationId, in the OpenAPI document, of the API call
	// the tool makes: its request is the tool's input schema.
	op string
	// rename gives a parameter of op another name in the input (the
	// path's {slug} is space, the Idempotency-Key header idempotency_key).
	rename map[string]string
	// fills are the properties of op's request the tool sets itself
	// (the caller's owner from whoami, the client's schema version, a
	// read's consistency), by path ("request.owner_ref"): not inputs.
	fills []string
	// extra are input properties of the tool's own, not of op's request
	// (publish_projection's channels), with their schemas.
	extra map[string]any
	// required lists the input properties the tool requires, by path
	// ("requests[].kind": [] is an array's items): what the API's handler
	// requires, which the document does not say.
	required []string
	readOnly bool
}

// add registers t with its handler if its domain (and commands) are
// enabled. The input schema is t.op's request (schema.go); the
// arguments are checked against it, then decoded into an In, whose
// fields must be the schema's properties (a test checks it) and whose
// jsonschema tags describe them. The handler's answer (a client result)
// becomes the tool's result as the API's JSON body, its error the API's
// error body with isError.
func add[In any](r *registrar, t tool, h func(ctx context.Context, c *client.Client, in In) (any, error)) {
	if !r.enabled.Has(t.domain, t.commands...) {
		return
	}
	// Errors here are programming errors (an operation renamed, a field
	// gone), the same for every run of a binary: every test catches them.
	doc, err := apiDocument()
	if err != nil {
		panic(fmt.Sprintf("mcptools: %v", err))
	}
	schema := inferred[In]()
	if t.op != "" {
		if schema, err = toolSchema(doc, t, schema); err != nil {
			panic(fmt.Sprintf("mcptools: tool %s: input schema: %v", t.name, err))
		}
	} else if t.required != nil {
		// A tool that names no operation (one written before schemas
		// came from the document) keeps its Go input type's schema, so
		// that it still serves; TestToolSchemasAreTheDocuments fails
		// for it until it names its operation.
		schema.Required = t.required
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcptools: tool %s: input schema: %v", t.name, err))
	}
	r.added = append(r.added, added{tool: t, schema: schema, input: reflect.TypeFor[In]()})
	// Reads say so; writes claim no hint (some are keyed and idempotent,
	// some end a lease or a task, some take a second item when repeated
	// without a key), so a host treats them as the default: writes.
	ann := &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly}
	var meta mcp.Meta // the operation, for a client that reads the document too
	if t.op != "" {
		meta = mcp.Meta{"operation": t.op}
	}
	r.s.AddTool(&mcp.Tool{Name: t.name, Description: t.description, InputSchema: schema, Annotations: ann, Meta: meta},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			in, err := decode[In](req.Params.Arguments, resolved)
			if err != nil {
				return refusal(err), nil
			}
			c, err := r.src(ctx, req.Extra)
			if err != nil {
				return refusal(err), nil
			}
			out, err := h(ctx, c, in)
			if err != nil {
				return refusal(err), nil
			}
			return answer(out)
		})
}

// added is a tool as registered, for the tests.
type added struct {
	tool
	schema *jsonschema.Schema
	input  reflect.Type
}

// rawSchemas map json.RawMessage (an envelope, metadata) to any JSON
// value: its Go shape is a byte slice.
var rawSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
}

// inferred is In's schema as its Go type and jsonschema tags say (what
// describes a tool's input properties, and what the test compares with
// the document's).
func inferred[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: rawSchemas})
	if err != nil {
		panic(fmt.Sprintf("mcptools: schema of %T: %v", *new(In), err))
	}
	return s
}

// decode checks the arguments against the schema and reads them into an
// In. A mismatch is errs.Invalid naming what is wrong, as the API's 422.
func decode[In any](args json.RawMessage, schema *jsonschema.Resolved) (In, error) {
	var in In
	m := map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &m); err != nil {
			return in, errs.Errorf(errs.CodeInvalid, "arguments: want a JSON object: %v", err)
		}
	}
	if err := schema.Validate(m); err != nil {
		return in, errs.Errorf(errs.CodeInvalid, "arguments: %v", err)
	}
	if len(m) == 0 {
		return in, nil
	}
	// From the arguments as sent, not from m: m holds numbers as float64,
	// which would round integers beyond 2^53 (a fence, a sequence).
	// Strictly: a property of the schema that In lacks would otherwise be
	// dropped without a word (a test keeps the two the same).
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, errs.Errorf(errs.CodeInvalid, "arguments: %v", err)
	}
	return in, nil
}

// answer is a successful tool result: the API's JSON body, as text and
// as structured content.
func answer(v any) (*mcp.CallToolResult, error) {
	body, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if body, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("encode the answer: %w", err)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}, StructuredContent: body}, nil
}

// refusal is a tool error carrying the API's error body: allocation's
// flat conflict, or {"error": {code, message, detail}}; its _meta says
// the HTTP status the API answers it with.
func refusal(err error) *mcp.CallToolResult {
	var body any
	status := errs.Status(errs.CodeOf(err))
	var conflict *client.AllocationConflictError
	if errors.As(err, &conflict) {
		body = conflict.AllocationConflict
		if conflict.Status != 0 {
			status = conflict.Status
		}
	} else {
		body = map[string]any{"error": errs.From(err)}
	}
	raw, mErr := json.Marshal(body)
	if mErr != nil { // an error's detail is JSON already: this does not happen
		raw, _ = json.Marshal(map[string]any{"error": errs.Errorf(errs.CodeInternal, "%v", err)})
	}
	return &mcp.CallToolResult{
		Meta:              mcp.Meta{"http_status": status},
		Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
		StructuredContent: json.RawMessage(raw),
		IsError:           true,
	}
}
