package openapi_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/domain/openapi"
)

// served starts a node with every built-in domain and fetches its
// document over HTTP.
func served(t *testing.T) (*cluster.Node, []byte) {
	t.Helper()
	cfg := cluster.DefaultConfig()
	cfg.Domains = builtin.Domains()
	cfg.ID, cfg.DataDir = "n1", t.TempDir()
	cfg.RaftAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Bootstrap = true
	node, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown(ctx) })
	resp, err := http.Get("http://" + node.APIAddr() + openapi.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20)) // the document is well under 16 MiB
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %v %s", openapi.Path, resp.StatusCode, err, body)
	}
	return node, body
}

type document struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

type operation struct {
	RequestBody *struct {
		Content map[string]struct {
			Schema any `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]json.RawMessage `json:"responses"`
}

// Every route the node registers is in the document with its method, and
// the document is OpenAPI 3.1.
func TestDocumentListsEveryRoute(t *testing.T) {
	node, body := served(t)
	var doc document
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	routes := node.Routes()
	if len(routes) < 50 {
		t.Fatalf("the node serves %d routes; want every built-in domain's", len(routes))
	}
	for _, r := range routes {
		method, path, _ := strings.Cut(r.Pattern, " ")
		if _, ok := doc.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("%s is not in the document", r.Pattern)
		}
	}
	// allocation's flat 409 is declared on its routes, the envelope on all.
	var create operation
	if err := json.Unmarshal(doc.Paths["/v1/spaces/{slug}/tasks"]["post"], &create); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(create.Responses["409"]), "allocation.Conflict") || !strings.Contains(string(create.Responses["201"]), "allocation.TaskResult") ||
		!strings.Contains(string(create.Responses["default"]), openapi.ErrorEnvelope) {
		t.Errorf("POST /v1/spaces/{slug}/tasks responses: %s", create.Responses)
	}
}

// example is one request the README or docs show.
type example struct {
	where, method, path, body string
}

// curlExample is a curl command with a method, a /v1 URL and a JSON body
// in single quotes, in any order, within one code span or block.
var (
	curlCommand = regexp.MustCompile("curl\\s[^`]*?-d\\s*'[^']*'")
	curlMethod  = regexp.MustCompile(`-X\s*([A-Z]+)`)
	curlPath    = regexp.MustCompile(`(/v1/[^\s'"?]*)`)
	curlBody    = regexp.MustCompile(`-d\s*'([^']*)'`)
)

// examples reads the request examples of README.md and docs/**/*.md.
func examples(t *testing.T) []example {
	t.Helper()
	files := []string{"../../README.md"}
	_ = filepath.WalkDir("../../docs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	var out []example
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			if f == files[0] && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			continue
		}
		for _, cmd := range curlCommand.FindAllString(string(raw), -1) {
			m, p, b := curlMethod.FindStringSubmatch(cmd), curlPath.FindStringSubmatch(cmd), curlBody.FindStringSubmatch(cmd)
			if p == nil || b == nil {
				continue
			}
			method := http.MethodPost // curl's method with -d
			if m != nil {
				method = m[1]
			}
			out = append(out, example{where: filepath.Base(f), method: method, path: p[1], body: b[1]})
		}
	}
	return out
}

// routeOf is the document's path that matches path ({name} segments
// match any segment).
func routeOf(paths map[string]map[string]json.RawMessage, path string) string {
	segs := strings.Split(path, "/")
	for p := range paths {
		ps := strings.Split(p, "/")
		if len(ps) != len(segs) {
			continue
		}
		match := true
		for i := range ps {
			match = match && (ps[i] == segs[i] || strings.HasPrefix(ps[i], "{"))
		}
		if match {
			return p
		}
	}
	return ""
}

// requestSchema is the request body schema of method path.
func requestSchema(t *testing.T, doc document, method, path string) any {
	t.Helper()
	route := routeOf(doc.Paths, path)
	var op operation
	if raw, ok := doc.Paths[route][strings.ToLower(method)]; !ok || json.Unmarshal(raw, &op) != nil || op.RequestBody == nil {
		t.Fatalf("%s %s: no route with a request body in the document", method, path)
	}
	return op.RequestBody.Content["application/json"].Schema
}

// Each request example of the README (and docs) validates against the
// request schema of its route; the validator refuses a spoiled one.
func TestReadmeExamplesValidate(t *testing.T) {
	_, body := served(t)
	var doc document
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	v, err := openapi.NewValidator(body)
	if err != nil {
		t.Fatal(err)
	}
	exs := examples(t)
	if len(exs) == 0 {
		t.Fatal("no curl request example found in README.md or docs/")
	}
	for _, ex := range exs {
		if err := v.Validate(requestSchema(t, doc, ex.method, ex.path), []byte(ex.body)); err != nil {
			t.Errorf("%s: %s %s %s: %v", ex.where, ex.method, ex.path, ex.body, err)
		}
	}
	// Could-fail: the first example with a field its route does not
	// declare, and with a field of the wrong type, is refused.
	ex := exs[0]
	schema := requestSchema(t, doc, ex.method, ex.path)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ex.body), &fields); err != nil || len(fields) == 0 {
		t.Fatalf("example %s is not a JSON object", ex.body)
	}
	spoiled := map[string]json.RawMessage{"no_such_field": json.RawMessage(`1`)}
	for k, val := range fields {
		spoiled[k] = val
	}
	if b, _ := json.Marshal(spoiled); v.Validate(schema, b) == nil {
		t.Errorf("%s accepted", b)
	}
	for k := range fields {
		wrong := map[string]json.RawMessage{}
		for k2, val := range fields {
			wrong[k2] = val
		}
		wrong[k] = json.RawMessage(`{"x":[true]}`) // another type than the example's
		if strings.HasPrefix(string(fields[k]), "{") {
			wrong[k] = json.RawMessage(`"text"`)
		}
		if b, _ := json.Marshal(wrong); v.Validate(schema, b) == nil {
			t.Errorf("%s accepted", b)
		}
	}
}
