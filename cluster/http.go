package cluster

import (
	"errors"
	"fmt"
	"maps"
	"net"
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
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxHeaderBytes bounds request headers.
const maxHeaderBytes = 64 << 10

func (n *Node) startHTTP(ln net.Listener) {
	n.sem = make(chan struct{}, n.cfg.MaxConcurrentRequests)
	n.httpSrv = &http.Server{
		Handler:           n.mux,
		ReadHeaderTimeout: n.cfg.ReadHeaderTimeout,
		ReadTimeout:       n.cfg.ReadTimeout,
		WriteTimeout:      n.cfg.WriteTimeout,
		IdleTimeout:       n.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          newHclog(n.logger, "http").StandardLogger(nil),
	}
	n.goBackground(func() {
		if err := n.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.logger.Error("HTTP server stopped", "error", err)
		}
	})
}

func (n *Node) metricsHandler() http.Handler {
	return promhttp.HandlerFor(n.metrics.registry, promhttp.HandlerOpts{})
}

// startMetrics serves GET /metrics alone on ln (Config.MetricsAddr).
func (n *Node) startMetrics(ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", n.metricsHandler())
	n.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: n.cfg.ReadHeaderTimeout, ReadTimeout: n.cfg.ReadTimeout,
		WriteTimeout: n.cfg.WriteTimeout, IdleTimeout: n.cfg.IdleTimeout, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: newHclog(n.logger, "metrics").StandardLogger(nil)}
	n.goBackground(func() {
		if err := n.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.logger.Error("metrics server stopped", "error", err)
		}
	})
}

// MetricsAddr is the address of the metrics listener ("" without one).
func (n *Node) MetricsAddr() string {
	if n.metricsLn == nil {
		return ""
	}
	return n.metricsLn.Addr().String()
}

// clusterRoutes are the host's own routes; every domain's are added to
// them (see buildMux).
func (n *Node) clusterRoutes() []domain.Route {
	route := func(method, path string, a domain.Access, h http.HandlerFunc) domain.Route {
		return domain.Route{Method: method, Path: path, Access: a, Handler: h}
	}
	return []domain.Route{
		route(http.MethodGet, "/v1/auth/whoami", domain.Authenticated, n.handleWhoami),
		route(http.MethodGet, "/v1/changes", domain.Authenticated, n.handleChanges),
		route(http.MethodGet, "/v1/cluster/status", domain.Authenticated, n.handleStatus),
		route(http.MethodGet, "/v1/cluster/capabilities", domain.Authenticated, n.handleCapabilities),
		route(http.MethodGet, "/v1/cluster/state-hash", domain.Admin, n.handleStateHash),
		route(http.MethodPost, "/v1/cluster/join", domain.Admin, n.handleJoin),
		route(http.MethodPost, "/v1/cluster/remove", domain.Admin, n.handleRemove),
		route(http.MethodGet, "/v1/cluster/snapshot", domain.Admin, n.handleSnapshot),
		route(http.MethodPost, "/v1/cluster/restore", domain.Admin, n.handleRestore),
		route(http.MethodPost, "/v1/commands", domain.Authenticated, n.handleCommand),
		route(http.MethodPost, "/v1/queries", domain.Authenticated, n.handleQuery),
		route(http.MethodPost, "/v1/internal/apply", domain.Peer, n.handleInternalApply),
		route(http.MethodPost, "/v1/internal/query", domain.Peer, n.handleInternalQuery),
	}
}

// buildMux mounts the host's routes and every domain's, behind
// instrument; a route that is malformed or served twice is a
// configuration error.
func (n *Node) buildMux() (*http.ServeMux, error) {
	mux := http.NewServeMux()
	taken := map[string]string{}
	var described []domain.Route // for the API document
	mount := func(owner string, routes []domain.Route) error {
		described = append(described, routes...)
		if err := domain.CheckRoutes(owner, routes, taken); err != nil {
			return err
		}
		for _, r := range routes {
			if err := handle(mux, r.Pattern(), n.instrument(r.Pattern(), r.Access, r.Handler)); err != nil {
				return fmt.Errorf("%s: %w", owner, err)
			}
			n.routeTable = append(n.routeTable, RouteInfo{Pattern: r.Pattern(), Access: r.Access})
		}
		return nil
	}
	if err := mount("cluster", n.clusterRoutes()); err != nil {
		return nil, err
	}
	for _, d := range n.cfg.Domains {
		if d.Routes == nil {
			continue
		}
		if err := mount("domain "+d.Name, d.Routes(n)); err != nil {
			return nil, err
		}
	}
	if err := mount("cluster", []domain.Route{n.openAPIRoute(&described)}); err != nil {
		return nil, err
	}
	for _, pattern := range slices.Sorted(maps.Keys(n.cfg.Mounts)) {
		if err := handle(mux, pattern, n.instrument(pattern, domain.Authenticated, n.cfg.Mounts[pattern](mux))); err != nil {
			return nil, fmt.Errorf("mount: %w", err)
		}
		n.routeTable = append(n.routeTable, RouteInfo{Pattern: pattern, Access: domain.Authenticated})
	}
	public := func(pattern string, h http.Handler) {
		mux.Handle(pattern, n.instrument(pattern, domain.Public, h))
		n.routeTable = append(n.routeTable, RouteInfo{Pattern: pattern, Access: domain.Public})
	}
	public("GET /healthz", http.HandlerFunc(n.handleHealthz))
	public("GET /readyz", http.HandlerFunc(n.handleReadyz))
	if n.cfg.MetricsAddr == "" {
		mux.Handle("GET /metrics", n.instrument("GET /metrics", domain.Authenticated, n.metricsHandler()))
		n.routeTable = append(n.routeTable, RouteInfo{Pattern: "GET /metrics", Access: domain.Authenticated})
	}
	mux.Handle("/", n.instrument("unknown", domain.Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			domain.WriteError(w, errs.Errorf(errs.CodeMethodNotAllowed, "%s takes %s, not %s", r.URL.Path, strings.Join(allow, ", "), r.Method))
			return
		}
		domain.WriteError(w, errs.Errorf(errs.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})))
	slices.SortFunc(n.routeTable, func(a, b RouteInfo) int { return strings.Compare(a.Pattern, b.Pattern) })
	return mux, nil
}

// openAPIRoute serves the API document (package domain/openapi) of every
// route in the route table: the mounted ones as described (read at the
// first request, once all are mounted), the rest (health, readiness,
// metrics) by pattern and access only.
func (n *Node) openAPIRoute(described *[]domain.Route) domain.Route {
	return openapi.Route(func() []domain.Route {
		out := slices.Clone(*described)
		for _, ri := range n.routeTable {
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
func (n *Node) Routes() []RouteInfo { return slices.Clone(n.routeTable) }

// instrument bounds concurrency (429 beyond MaxConcurrentRequests), bounds
// the request by the deadline it asks for (withRequestTimeout),
// authenticates the caller and applies the route's access level (401, 403),
// puts the verified principal on the request's context, and counts and
// times requests by route and status.
func (n *Node) instrument(route string, a domain.Access, h http.Handler) http.Handler {
	// The series of a 200 answer, looked up once: WithLabelValues hashes
	// and checks both labels on every call. Made on first use, so that a
	// route never called shows no series.
	okSeries := sync.OnceValues(func() (prometheus.Counter, prometheus.Observer) {
		return n.metrics.httpRequests.WithLabelValues(route, "200"), n.metrics.httpDuration.WithLabelValues(route, "200")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		defer func() {
			var count prometheus.Counter
			var duration prometheus.Observer
			if rec.status == http.StatusOK {
				count, duration = okSeries()
			} else {
				code := statusLabel(rec.status)
				count, duration = n.metrics.httpRequests.WithLabelValues(route, code), n.metrics.httpDuration.WithLabelValues(route, code)
			}
			count.Inc()
			duration.Observe(time.Since(start).Seconds())
		}()
		select {
		case n.sem <- struct{}{}:
			defer func() { <-n.sem }()
		default:
			domain.WriteError(rec, errs.Errorf(errs.CodeBackpressure, "more than %d requests in flight", cap(n.sem)))
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
		c, err := n.authenticate(r)
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
			n.staleness(rec.Header())
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

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func writeMsgpack(w http.ResponseWriter, reply wireReply) {
	body, err := arblog.Marshal(reply)
	if err != nil {
		domain.WriteError(w, errs.Errorf(errs.CodeInternal, "encode reply: %v", err))
		return
	}
	w.Header().Set("Content-Type", mimeMsgpack)
	_, _ = w.Write(body)
}
