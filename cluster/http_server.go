package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/arbiterhq/arbiter/cluster/internal/hclogslog"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxHeaderBytes bounds request headers.
const maxHeaderBytes = 64 << 10

// start serves the API on ln, and the metrics on their own listener if
// Config.MetricsAddr asks for one (listenMetrics opened it).
func (hs *httpAPI) start(ln net.Listener) {
	hs.sem = make(chan struct{}, hs.cfg.MaxConcurrentRequests)
	hs.httpSrv = &http.Server{
		Handler:           hs.mux,
		ReadHeaderTimeout: hs.cfg.ReadHeaderTimeout,
		ReadTimeout:       hs.cfg.ReadTimeout,
		WriteTimeout:      hs.cfg.WriteTimeout,
		IdleTimeout:       hs.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          hclogslog.New(hs.logger, "http").StandardLogger(nil),
	}
	hs.goBackground(func() {
		if err := hs.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			hs.logger.Error("HTTP server stopped", "error", err)
		}
	})
	if hs.metricsLn != nil {
		hs.startMetrics(hs.metricsLn)
	}
}

func (hs *httpAPI) metricsHandler() http.Handler {
	return promhttp.HandlerFor(hs.metrics.registry, promhttp.HandlerOpts{})
}

// startMetrics serves GET /metrics alone on ln (Config.MetricsAddr).
func (hs *httpAPI) startMetrics(ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", hs.metricsHandler())
	hs.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: hs.cfg.ReadHeaderTimeout, ReadTimeout: hs.cfg.ReadTimeout,
		WriteTimeout: hs.cfg.WriteTimeout, IdleTimeout: hs.cfg.IdleTimeout, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: hclogslog.New(hs.logger, "metrics").StandardLogger(nil)}
	hs.goBackground(func() {
		if err := hs.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			hs.logger.Error("metrics server stopped", "error", err)
		}
	})
}

// MetricsAddr is the address of the metrics listener ("" without one).
func (n *Node) MetricsAddr() string {
	if n.api.metricsLn == nil {
		return ""
	}
	return n.api.metricsLn.Addr().String()
}

// listenMetrics opens Config.MetricsAddr's listener, if it names one.
func (hs *httpAPI) listenMetrics() error {
	if hs.cfg.MetricsAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", hs.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("cluster: listen on %s (%s): %w", hs.cfg.MetricsAddr, hs.cfg.name("MetricsAddr"), err)
	}
	hs.metricsLn = ln
	return nil
}

// closeMetrics closes the metrics listener of a failed Start: its server
// if it serves (so that Serve returns ErrServerClosed), else the listener.
func (hs *httpAPI) closeMetrics() {
	switch {
	case hs.metricsSrv != nil:
		_ = hs.metricsSrv.Close()
	case hs.metricsLn != nil:
		_ = hs.metricsLn.Close()
	}
}

// stop ends the API of a stopping node. In-flight requests get a short
// grace period. Connections that never sent a request count as busy in
// http.Server.Shutdown for their first 5 s, so waiting longer would only
// wait for those.
func (hs *httpAPI) stop(ctx context.Context) {
	hs.httpSrv.SetKeepAlivesEnabled(false)
	httpCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := hs.httpSrv.Shutdown(httpCtx); err != nil {
		_ = hs.httpSrv.Close()
	}
	cancel()
	if hs.metricsSrv != nil {
		_ = hs.metricsSrv.Close()
	}
}
