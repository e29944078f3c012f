package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/canon"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxBodyBytes bounds a JSON request body; larger ones are refused with 413.
const MaxBodyBytes = 1 << 20

// maxHeaderBytes bounds request headers.
const maxHeaderBytes = 64 << 10

func (n *Node) startHTTP(ln net.Listener) {
	n.sem = make(chan struct{}, n.cfg.MaxConcurrentRequests)
	mux := http.NewServeMux()
	n.routes(mux)
	n.httpSrv = &http.Server{
		Handler:           mux,
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

func (n *Node) routes(mux *http.ServeMux) {
	handle := func(pattern string, a access, h func(http.ResponseWriter, *http.Request)) {
		mux.Handle(pattern, n.instrument(pattern, a, http.HandlerFunc(h)))
	}
	member := func(pattern string, h func(http.ResponseWriter, *http.Request)) { handle(pattern, accessPrincipal, h) }
	handle("POST /v1/nodes/create", accessAdmin, jsonRoute(n.nodes().CreateIfAbsent, nil))
	handle("POST /v1/nodes/cas", accessAdmin, jsonRoute(n.nodes().CompareAndSet, nil))
	handle("GET /v1/nodes/get", accessAdmin, n.handleGetNode)
	handle("GET /v1/nodes/by-label", accessAdmin, n.handleNodesByLabel)
	member("POST /v1/concepts/reserve", jsonRoute(n.concepts().Reserve, reserveStatus))
	member("POST /v1/concepts/reserve-next", jsonRoute(n.concepts().ReserveNextNumeric, reserveStatus))
	member("POST /v1/concepts/transition", jsonRoute(n.concepts().Transition, nil))
	member("GET /v1/concepts/get", n.handleConceptGet)
	member("GET /v1/concepts/list", n.handleConceptList)
	n.capacityRoutes(member)
	member("GET /v1/changes", n.handleChanges)
	member("GET /v1/cluster/status", n.handleStatus)
	handle("GET /v1/cluster/state-hash", accessAdmin, n.handleStateHash)
	handle("POST /v1/cluster/join", accessAdmin, n.handleJoin)
	handle("POST /v1/cluster/remove", accessAdmin, n.handleRemove)
	handle("GET /v1/cluster/snapshot", accessAdmin, n.handleSnapshot)
	handle("POST /v1/cluster/restore", accessAdmin, n.handleRestore)
	member("POST /v1/commands", n.handleCommand)
	member("POST /v1/queries", n.handleQuery)
	handle("POST /v1/internal/apply", accessPeer, n.handleInternalApply)
	handle("POST /v1/internal/query", accessPeer, n.handleInternalQuery)
	handle("GET /healthz", accessPublic, n.handleHealthz)
	handle("GET /readyz", accessPublic, n.handleReadyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.metrics.registry, promhttp.HandlerOpts{}))
	mux.Handle("/", n.instrument("unknown", accessPublic, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errs.Errorf(errs.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})))
}

// instrument bounds concurrency (429 beyond MaxConcurrentRequests),
// authenticates the caller and applies the route's access level (401, 403),
// puts the verified principal on the request's context, and counts
// requests by route and status.
func (n *Node) instrument(route string, a access, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() { n.metrics.httpRequests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc() }()
		select {
		case n.sem <- struct{}{}:
			defer func() { <-n.sem }()
		default:
			writeError(rec, errs.Errorf(errs.CodeBackpressure, "more than %d requests in flight", cap(n.sem)))
			return
		}
		if a == accessPublic {
			h.ServeHTTP(rec, r)
			return
		}
		c, err := n.authenticate(r)
		if err == nil {
			err = authorizeRoute(a, c)
		}
		if err != nil {
			if errs.CodeOf(err) == errs.CodeUnauthorized {
				rec.Header().Set("WWW-Authenticate", `Bearer realm="arbiter"`)
			}
			writeError(rec, err)
			return
		}
		h.ServeHTTP(rec, r.WithContext(fsm.WithPrincipal(r.Context(), c.principal)))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// jsonRoute adapts a typed call to a POST route: decode the JSON request,
// call, answer with the result (status 200, or what status says). A failure
// that comes with a result (a capacity denial) carries the result in
// error.detail.result.
func jsonRoute[Req any, Res any](call func(context.Context, Req) (*Res, error), status func(*Res) int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decodeJSON(w, r, &req); err != nil {
			writeError(w, err)
			return
		}
		res, err := call(r.Context(), req)
		if err != nil {
			if e := errs.From(err); res != nil && e.Detail != nil {
				detailed := *e
				detailed.Detail = map[string]any{"decision": e.Detail["decision"], "result": res}
				err = &detailed
			}
			writeError(w, err)
			return
		}
		code := http.StatusOK
		if status != nil {
			code = status(res)
		}
		writeJSON(w, code, res)
	}
}

// decodeJSON reads exactly one JSON object of at most MaxBodyBytes into v,
// refusing unknown fields. Numbers keep their literals (json.Number).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errs.Errorf(errs.CodeTooLarge, "request body exceeds %d bytes", MaxBodyBytes)
		}
		return errs.Errorf(errs.CodeInvalid, "reading body: %v", err)
	}
	// Go's decoder would quietly replace invalid UTF-8 and lone surrogate
	// escapes with U+FFFD, storing something other than what was sent.
	if !utf8.Valid(body) {
		return errs.New(errs.CodeInvalid, "malformed JSON body: not valid UTF-8")
	}
	if err := canon.CheckEscapes(body); err != nil {
		return errs.Errorf(errs.CodeInvalid, "malformed JSON body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errs.Errorf(errs.CodeInvalid, "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errs.New(errs.CodeInvalid, "malformed JSON body: data after the value")
	}
	return nil
}

// readBody reads a binary body of at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errs.Errorf(errs.CodeTooLarge, "request body exceeds %d bytes", limit)
		}
		return nil, errs.Errorf(errs.CodeInvalid, "reading body: %v", err)
	}
	return body, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes {"error": {...}} with the status of its code.
func writeError(w http.ResponseWriter, err error) {
	e := errs.From(err)
	status := errs.Status(e.Code)
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, map[string]*errs.Error{"error": e})
}

func writeMsgpack(w http.ResponseWriter, reply wireReply) {
	body, err := arblog.Marshal(reply)
	if err != nil {
		writeError(w, errs.Errorf(errs.CodeInternal, "encode reply: %v", err))
		return
	}
	w.Header().Set("Content-Type", mimeMsgpack)
	_, _ = w.Write(body)
}

// queryParams checks that r's query holds only allowed keys, each once.
func queryParams(r *http.Request, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	for k, vs := range r.URL.Query() {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			return nil, errs.Errorf(errs.CodeInvalid, "unknown query parameter %q", k)
		}
		if len(vs) != 1 {
			return nil, errs.Errorf(errs.CodeInvalid, "query parameter %q given %d times", k, len(vs))
		}
		out[k] = vs[0]
	}
	return out, nil
}

// readQuery reads a read route's query parameters: the allowed ones plus
// consistency, which it parses.
func readQuery(r *http.Request, allowed ...string) (map[string]string, fsm.Consistency, error) {
	p, err := queryParams(r, append(allowed, "consistency")...)
	if err != nil {
		return nil, 0, err
	}
	c, err := consistencyParam(p["consistency"])
	return p, c, err
}

func consistencyParam(v string) (fsm.Consistency, error) {
	switch v {
	case "", "linearizable":
		return fsm.Linearizable, nil
	case "stale":
		return fsm.Stale, nil
	}
	return 0, errs.Errorf(errs.CodeInvalid, "consistency must be linearizable or stale, not %q", v)
}

func intParam(name, v string, lo, hi int) (int, error) {
	if v == "" {
		return 0, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < lo || i > hi {
		return 0, errs.Errorf(errs.CodeInvalid, "%s must be an integer between %d and %d", name, lo, hi)
	}
	return i, nil
}

// maxLongPoll bounds how long a change-feed request may wait.
const maxLongPoll = 30 * time.Second
