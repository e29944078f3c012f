package mcptools

import (
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
	return s
}

// instructions is what the server tells an agent host about itself.
const instructions = `Arbiter decides who got there first, replicated by Raft. Each tool is one call of the cluster's HTTP API, made with this server's credential: its result is the API's JSON body; a refusal is a tool error whose content is the API's error body ({"error":{"code","message","detail"}}, or allocation's flat {"error":"allocation_conflict","code","winner",...}). A refusal changed nothing; read its code before retrying.`

// registrar adds the tools of the enabled domains to a server.
type registrar struct {
	s       *mcp.Server
	src     Source
	enabled Enabled
}

// tool describes one tool: its name, what an agent reads of it, and the
// command the cluster must enable for it (or only its domain for reads).
type tool struct {
	name, description string
	domain            string
	commands          []string
	// required lists the top-level input properties the server requires;
	// nil keeps what the input type's JSON tags say.
	required []string
	readOnly bool
}

// add registers t with its handler if its domain (and commands) are
// enabled. The input schema is inferred from In; the handler's answer
// (a client result) becomes the tool's result as the API's JSON body,
// its error the API's error body with isError.
func add[In any](r *registrar, t tool, h func(ctx context.Context, c *client.Client, in In) (any, error)) {
	if !r.enabled.Has(t.domain, t.commands...) {
		return
	}
	schema := inputSchema[In](t.required)
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcptools: tool %s: input schema: %v", t.name, err)) // a programming error, caught by every test
	}
	// Reads say so; writes claim no hint (some are keyed and idempotent,
	// some end a lease or a task, some take a second item when repeated
	// without a key), so a host treats them as the default: writes.
	ann := &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly}
	r.s.AddTool(&mcp.Tool{Name: t.name, Description: t.description, InputSchema: schema, Annotations: ann},
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

// rawSchemas map json.RawMessage (an envelope, metadata) to any JSON
// value: its Go shape is a byte slice.
var rawSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
}

// typeSchemas are the schemas of types whose JSON is not their Go shape,
// or whose API requires less than their JSON tags say.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): rawSchemas[reflect.TypeFor[json.RawMessage]()],
	// A work item in a batch: the server requires only kind (and checks
	// the rest, naming the field it refuses).
	reflect.TypeFor[client.SubmitRequest](): mustSchema[client.SubmitRequest]([]string{"kind"}, rawSchemas),
}

// inputSchema is In's JSON schema, with required as its required
// properties when it is not nil. The inferred list (every field without
// omitempty) is stricter than the API, whose handlers check presence and
// name the field they refuse.
func inputSchema[In any](required []string) *jsonschema.Schema {
	return mustSchema[In](required, typeSchemas)
}

func mustSchema[T any](required []string, types map[reflect.Type]*jsonschema.Schema) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		panic(fmt.Sprintf("mcptools: schema of %T: %v", *new(T), err))
	}
	if required != nil {
		s.Required = required
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
	if err := json.Unmarshal(args, &in); err != nil {
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
