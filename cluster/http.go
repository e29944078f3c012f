package cluster

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/openapi"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/prometheus/client_golang/prometheus"
)

// clusterRoutes are the host's own routes; every domain's are added to
// them (see buildMux).
func (hs *httpAPI) clusterRoutes() []domain.Route {
	route := func(method, path string, a domain.Access, h http.HandlerFunc) domain.Route {
		return domain.Route{Method: method, Path: path, Access: a, Handler: h}
	}
	return []domain.Route{
		route(http.MethodGet, "/v1/auth/whoami", domain.Authenticated, hs.handleWhoami),
		route(http.MethodGet, "/v1/changes", domain.Authenticated, hs.handleChanges),
		route(http.MethodGet, "/v1/cluster/status", domain.Authenticated, hs.handleStatus),
		route(http.MethodGet, "/v1/cluster/capabilities", domain.Authenticated, hs.handleCapabilities),
		route(http.MethodGet, "/v1/cluster/state-hash", domain.Admin, hs.handleStateHash),
		route(http.MethodPost, "/v1/cluster/join", domain.Admin, hs.handleJoin),
		route(http.MethodPost, "/v1/cluster/remove", domain.Admin, hs.handleRemove),
		route(http.MethodPost, "/v1/cluster/transfer-leader", domain.Admin, hs.handleTransfer),
		route(http.MethodGet, "/v1/debug/bundle", domain.Admin, hs.handleDebugBundle),
		route(http.MethodGet, "/v1/cluster/snapshot", domain.Admin, hs.handleSnapshot),
		route(http.MethodPost, "/v1/cluster/restore", domain.Admin, hs.handleRestore),
		route(http.MethodPost, "/v1/commands", domain.Authenticated, hs.handleCommand),
		route(http.MethodPost, "/v1/queries", domain.Authenticated, hs.handleQuery),
		route(http.MethodPost, "/v1/internal/apply", domain.Peer, hs.handleInternalApply),
		route(http.MethodPost, "/v1/internal/query", domain.Peer, hs.handleInternalQuery),
	}
}

// buildMux mounts the host's routes and every domain's, behind
// instrument; a route that is malformed or served twice is a
// configuration error.
func (hs *httpAPI) buildMux() (*http.ServeMux, error) {
	mux := http.NewServeMux()
	taken := map[string]string{}
	var described []domain.Route // for the API document
	mount := func(owner string, routes []domain.Route) error {
		described = append(described, routes...)
		if err := domain.CheckRoutes(owner, routes, taken); err != nil {
			return err
		}
		for _, r := range routes {
			if err := handle(mux, r.Pattern(), hs.instrument(r.Pattern(), r.Access, r.Handler)); err != nil {
				return fmt.Errorf("%s: %w", owner, err)
			}
			hs.routeTable = append(hs.routeTable, RouteInfo{Pattern: r.Pattern(), Access: r.Access})
		}
		return nil
	}
	if err := mount("cluster", hs.clusterRoutes()); err != nil {
		return nil, err
	}
	for _, d := range hs.cfg.Domains {
		if d.Routes == nil {
			continue
		}
		if err := mount("domain "+d.Name, d.Routes(hs.dom)); err != nil {
			return nil, err
		}
	}
	if err := mount("cluster", []domain.Route{hs.openAPIRoute(&described)}); err != nil {
		return nil, err
	}
	for _, pattern := range slices.Sorted(maps.Keys(hs.cfg.Mounts)) {
		if err := handle(mux, pattern, hs.instrument(pattern, domain.Authenticated, hs.cfg.Mounts[pattern](mux))); err != nil {
			return nil, fmt.Errorf("mount: %w", err)
		}
		hs.routeTable = append(hs.routeTable, RouteInfo{Pattern: pattern, Access: domain.Authenticated})
	}
	public := func(pattern string, h http.Handler) {
		mux.Handle(pattern, hs.instrument(pattern, domain.Public, h))
		hs.routeTable = append(hs.routeTable, RouteInfo{Pattern: pattern, Access: domain.Public})
	}
	public("GET /healthz", http.HandlerFunc(hs.handleHealthz))
	public("GET /readyz", http.HandlerFunc(hs.handleReadyz))
	if hs.cfg.MetricsAddr == "" {
		mux.Handle("GET /metrics", hs.instrument("GET /metrics", domain.Authenticated, hs.metricsHandler()))
		hs.routeTable = append(hs.routeTable, RouteInfo{Pattern: "GET /metrics", Access: domain.Authenticated})
	}
	mux.Handle("/", hs.instrument("unknown", domain.Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			domain.WriteError(w, errs.Errorf(errs.CodeMethodNotAllowed, "%s takes %s, not %s", r.URL.Path, strings.Join(allow, ", "), r.Method))
			return
		}
		domain.WriteError(w, errs.Errorf(errs.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})))
	slices.SortFunc(hs.routeTable, func(a, b RouteInfo) int { return strings.Compare(a.Pattern, b.Pattern) })
	return mux, nil
}

// openAPIRoute serves the API document (package domain/openapi) of every
// route in the route table: the mounted ones as described (read at the
// first request, once all are mounted), the rest (health, readiness,
// metrics) by pattern and access only.
func (hs *httpAPI) openAPIRoute(described *[]domain.Route) domain.Route {
	return openapi.Route(func() []domain.Route {
		out := slices.Clone(*described)
		for _, ri := range hs.routeTable {
			method, path, ok := strings.Cut(ri.Pattern, " ")
			if !ok {
				continue // a mount of another protocol (Config.Mounts: /mcp), not of this API
			}
			if !slices.ContainsFunc(out, func(r domain.Route) bool { return r.Pattern() == ri.Pattern }) {
				out = append(out, domain.Route{Method: method, Path: path, Access: ri.Access})
			}
		}
		return out
	})
}

// routeMethods are the methods routes may use (domain.CheckRoutes).
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}

// allowedMethods lists the methods with which r's path names a route
// (GET implies HEAD, as ServeMux serves it), for the 405 of a known path
// called with another method. Only the catch-all route calls it.
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range routeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	return allow
}

// handle registers h, turning ServeMux's panic on a pattern in conflict
// with one already registered ("/v1/{a}/x" against "/v1/x/{b}") into an
// error.
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("route %q: %v", pattern, r)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// RouteInfo is one route a node serves and the access it asks of callers.
type RouteInfo struct {
	Pattern string // "METHOD /path"
	Access  domain.Access
}

// Routes lists the routes this node serves (its own and its domains'),
// sorted by pattern.
func (n *Node) Routes() []RouteInfo { return slices.Clone(n.api.routeTable) }

// instrument bounds concurrency (429 beyond MaxConcurrentRequests), bounds
// the request by the deadline it asks for (withRequestTimeout),
// authenticates the caller and applies the route's access level (401, 403),
// puts the verified principal on the request's context, and counts and
// times requests by route and status.
func (hs *httpAPI) instrument(route string, a domain.Access, h http.Handler) http.Handler {
	// The series of a 200 answer, looked up once: WithLabelValues hashes
	// and checks both labels on every call. Made on first use, so that a
	// route never called shows no series.
	okSeries := sync.OnceValues(func() (prometheus.Counter, prometheus.Observer) {
		return hs.metrics.httpRequests.WithLabelValues(route, "200"), hs.metrics.httpDuration.WithLabelValues(route, "200")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := statusRecorders.Get().(*statusRecorder)
		rec.ResponseWriter, rec.status = w, http.StatusOK
		start := time.Now()
		defer func() {
			// Runs last: the handler has returned, and w is not to be
			// used after that.
			rec.ResponseWriter = nil
			statusRecorders.Put(rec)
		}()
		defer func() {
			var count prometheus.Counter
			var duration prometheus.Observer
			if rec.status == http.StatusOK {
				count, duration = okSeries()
			} else {
				code := statusLabel(rec.status)
				count, duration = hs.metrics.httpRequests.WithLabelValues(route, code), hs.metrics.httpDuration.WithLabelValues(route, code)
			}
			count.Inc()
			duration.Observe(time.Since(start).Seconds())
		}()
		select {
		case hs.sem <- struct{}{}:
			defer func() { <-hs.sem }()
		default:
			domain.WriteError(rec, errs.Errorf(errs.CodeBackpressure, "more than %d requests in flight", cap(hs.sem)))
			return
		}
		if a == domain.Public {
			h.ServeHTTP(rec, r)
			return
		}
		r, cancel, err := withRequestTimeout(r)
		if err != nil {
			domain.WriteError(rec, err)
			return
		}
		defer cancel()
		c, err := hs.authenticate(r)
		if err == nil {
			err = authorizeRoute(a, c)
		}
		if err != nil {
			if errs.CodeOf(err) == errs.CodeUnauthorized {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="arbiter"`)
			}
			domain.WriteError(rec, err)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.RawQuery, "stale") && r.URL.Query().Get("consistency") == "stale" {
			hs.staleness(rec.Header())
		}
		h.ServeHTTP(rec, r.WithContext(fsm.WithPrincipal(r.Context(), c.principal)))
	})
}

// statusLabel is status as a metric label. The common statuses are
// constants: strconv.Itoa allocates for any number above 99.
func statusLabel(status int) string {
	switch status {
	case http.StatusOK:
		return "200"
	case http.StatusCreated:
		return "201"
	case http.StatusNoContent:
		return "204"
	case http.StatusBadRequest:
		return "400"
	case http.StatusNotFound:
		return "404"
	case http.StatusConflict:
		return "409"
	case http.StatusUnprocessableEntity:
		return "422"
	case http.StatusTooManyRequests:
		return "429"
	case http.StatusServiceUnavailable:
		return "503"
	}
	return strconv.Itoa(status)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

// statusRecorders keeps instrument's recorders for reuse: one a request
// otherwise (issue 42).
var statusRecorders = sync.Pool{New: func() any { return new(statusRecorder) }}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// writeMsgpack answers reply in msgpack. It writes every create's answer
// (and each forwarded batch's), so it allocates nothing of its own (issue
// 42): the header value is shared, and the body is encoded into a pooled
// buffer, which Write has copied by the time it returns.
func writeMsgpack(w http.ResponseWriter, reply wireReply) {
	buf := replyBuffers.Get().(*[]byte)
	body, err := reply.AppendMsgpack((*buf)[:0]) // as arblog.Marshal writes it, without boxing reply
	if err != nil {
		replyBuffers.Put(buf)
		domain.WriteError(w, errs.Errorf(errs.CodeInternal, "encode reply: %v", err))
		return
	}
	w.Header()["Content-Type"] = msgpackContentType
	_, _ = w.Write(body)
	if cap(body) <= maxPooledReplyBytes { // a rare large answer is not kept
		*buf = body
		replyBuffers.Put(buf)
	}
}

// msgpackContentType is the Content-Type of every msgpack answer, shared:
// net/http only reads it (it copies the header map before writing it).
var msgpackContentType = []string{mimeMsgpack}

// replyBuffers keeps the buffers writeMsgpack encodes into, up to
// maxPooledReplyBytes each (a batch's answer of up to maxForwardBatch
// replies fits).
var replyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledReplyBytes = 64 << 10
