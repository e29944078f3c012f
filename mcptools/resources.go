package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/arbiterhq/arbiter/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resources: what an agent reads as context rather than calls. Each is
// the API's JSON body of the read it names.
const (
	statusURI       = "arbiter://cluster/status"
	capabilitiesURI = "arbiter://cluster/capabilities"
	tasksTemplate   = "arbiter://spaces/{space}/tasks"
	currentTemplate = "arbiter://projection/targets/{target_id}/current"
)

func (r *registrar) resources() {
	r.s.AddResource(&mcp.Resource{URI: statusURI, Name: "cluster_status", MIMEType: "application/json",
		Description: "The answering node's view of the cluster: leader, term, indexes, members, enabled commands."},
		r.read(func(ctx context.Context, c *client.Client, _ string) (any, error) { return c.Cluster().Status(ctx) }))
	r.s.AddResource(&mcp.Resource{URI: capabilitiesURI, Name: "cluster_capabilities", MIMEType: "application/json",
		Description: "The commands the cluster enables, and those the answering node serves."},
		r.read(func(ctx context.Context, c *client.Client, _ string) (any, error) {
			return c.Cluster().Capabilities(ctx, client.Linearizable)
		}))
	if r.enabled.Has("allocation") {
		r.s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tasksTemplate, Name: "space_tasks", MIMEType: "application/json",
			Description: "The first page (up to 128) of a space's tasks, as allocation_list_tasks answers it."},
			r.read(func(ctx context.Context, c *client.Client, uri string) (any, error) {
				slug, err := segment(uri, "arbiter://spaces/", "/tasks")
				if err != nil {
					return nil, err
				}
				return c.Allocation().ListTasks(ctx, slug, client.TaskQuery{PageQuery: client.PageQuery{Limit: 128}})
			}))
	}
	if r.enabled.Has("projection") {
		r.s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: currentTemplate, Name: "projection_current", MIMEType: "application/json",
			Description: "A target's current publication, byte for byte its current.json."},
			r.read(func(ctx context.Context, c *client.Client, uri string) (any, error) {
				target, err := segment(uri, "arbiter://projection/targets/", "/current")
				if err != nil {
					return nil, err
				}
				body, err := c.Projection().Current(ctx, target, client.Linearizable)
				if err != nil {
					return nil, err
				}
				return json.RawMessage(body), nil
			}))
	}
}

// read is a resource handler answering the JSON of get's result. A
// refusal is the read's error (the API's error text).
func (r *registrar) read(get func(ctx context.Context, c *client.Client, uri string) (any, error)) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		c, err := r.src(ctx, req.Extra)
		if err != nil {
			return nil, err
		}
		v, err := get(ctx, c, req.Params.URI)
		if err != nil {
			return nil, err
		}
		body, ok := v.(json.RawMessage)
		if !ok {
			if body, err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "application/json", Text: string(body)}}}, nil
	}
}

// segment is the one path segment of uri between prefix and suffix,
// unescaped.
func segment(uri, prefix, suffix string) (string, error) {
	rest, ok := strings.CutPrefix(uri, prefix)
	if !ok {
		return "", fmt.Errorf("resource %q: want %s<name>%s", uri, prefix, suffix)
	}
	name, ok := strings.CutSuffix(rest, suffix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("resource %q: want %s<name>%s", uri, prefix, suffix)
	}
	return url.PathUnescape(name)
}
