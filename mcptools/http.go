package mcptools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The streamable HTTP endpoint a node mounts at /mcp (arbiter serve
// --mcp; cluster.Config.Mounts). The node authenticates the request as
// it does the API's; each tool call then goes to the node's own API
// handler, in process, carrying the request's bearer token, so the call
// is that principal's and passes the API's authentication, bounds and
// metrics as any other. (A principal known only by its client
// certificate cannot be forwarded this way: such an agent runs `arbiter
// mcp` with --cert and --key.)
//
// The endpoint is stateless (every POST stands alone, answered as JSON):
// the tools need no server-to-client requests, and no session state has
// to outlive a request on one node.

// maxServers bounds the servers HTTPHandler keeps, one per distinct
// enabled set (a handful over a cluster's life: one per upgrade step).
const maxServers = 16

// HTTPHandler is the /mcp endpoint of a node whose API handler is api;
// timeout bounds each call of the API.
func HTTPHandler(api http.Handler, timeout time.Duration) http.Handler {
	h := &httpServers{hc: &http.Client{Transport: inProcess{api}}, timeout: timeout, servers: map[string]*mcp.Server{}}
	return mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

type httpServers struct {
	hc      *http.Client
	timeout time.Duration
	mu      sync.Mutex
	servers map[string]*mcp.Server // by enabled set
}

// server is the MCP server for req: the tools of what the cluster
// enables now, as req's credential reads it.
func (h *httpServers) server(req *http.Request) *mcp.Server {
	c, err := h.client(req.Header)
	if err != nil {
		return nil // the SDK answers 400
	}
	enabled, err := EnabledOf(req.Context(), c)
	if err != nil {
		return nil
	}
	key := enabled.String()
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.servers[key]; ok {
		return s
	}
	s := New(enabled, func(_ context.Context, extra *mcp.RequestExtra) (*client.Client, error) {
		if extra == nil {
			return nil, errs.New(errs.CodeUnauthorized, "no HTTP request carries this call")
		}
		return h.client(extra.Header)
	})
	if len(h.servers) >= maxServers {
		clear(h.servers) // an old enabled set is not asked for again
	}
	h.servers[key] = s
	return s
}

// client is a client of the node's API with the bearer token of header.
func (h *httpServers) client(header http.Header) (*client.Client, error) {
	opts := []client.Option{client.WithHTTPClient(h.hc), client.WithTimeout(h.timeout)}
	if token, ok := strings.CutPrefix(header.Get("Authorization"), "Bearer "); ok {
		opts = append(opts, client.WithToken(strings.TrimSpace(token)))
	}
	return client.New([]string{"http://in-process"}, opts...)
}

// String is the enabled set in a canonical form.
func (e Enabled) String() string {
	var b strings.Builder
	for _, d := range slices.Sorted(maps.Keys(e.domains)) {
		cmds := slices.Sorted(slices.Values(e.domains[d]))
		fmt.Fprintf(&b, "%s:%s;", d, strings.Join(cmds, ","))
	}
	return b.String()
}

// maxInProcessReply bounds an answer of the API kept in memory (the
// client reads at most 32 MiB too).
const maxInProcessReply = 32 << 20

// inProcess sends a request to the API handler in this process.
type inProcess struct{ api http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	in := r.Clone(r.Context())
	in.RequestURI = r.URL.RequestURI()
	in.RemoteAddr = "in-process"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	if trace := httptrace.ContextClientTrace(r.Context()); trace != nil && trace.WroteHeaders != nil {
		trace.WroteHeaders() // from here the API may act on it: a lost answer is an unknown outcome
	}
	w := &recorder{header: http.Header{}, status: http.StatusOK}
	t.api.ServeHTTP(w, in)
	if w.overflow {
		return nil, fmt.Errorf("answer of more than %d bytes", maxInProcessReply)
	}
	return &http.Response{Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(bytes.NewReader(w.body.Bytes())), ContentLength: int64(w.body.Len()), Request: r}, nil
}

// recorder is the ResponseWriter of an in-process request.
type recorder struct {
	header   http.Header
	status   int
	wrote    bool
	body     bytes.Buffer
	overflow bool
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.body.Len()+len(p) > maxInProcessReply {
		w.overflow = true
		return 0, fmt.Errorf("answer of more than %d bytes", maxInProcessReply)
	}
	return w.body.Write(p)
}
