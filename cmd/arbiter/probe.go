package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// probeTimeout bounds each call to one member, so that a dead member
// costs a member list or an endpoint status this long, not the whole
// --timeout.
const probeTimeout = 3 * time.Second

// metricsOf reads a node's /metrics (public on every node).
func (a *app) metricsOf(ctx context.Context, base string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	hc, err := a.httpClient()
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(io.LimitReader(resp.Body, 16<<20))
}

// gauge is the value of a metric without labels (ok false if absent).
func gauge(mf map[string]*dto.MetricFamily, name string) (float64, bool) {
	f := mf[name]
	if f == nil || len(f.Metric) == 0 {
		return 0, false
	}
	return value(f.Metric[0]), true
}

// byLabel is every sample of a metric by the value of one label.
func byLabel(mf map[string]*dto.MetricFamily, name, label string) map[string]float64 {
	out := map[string]float64{}
	if f := mf[name]; f != nil {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == label {
					out[l.GetValue()] = value(m)
				}
			}
		}
	}
	return out
}

// labelOf is the value of a label of a metric's first sample.
func labelOf(mf map[string]*dto.MetricFamily, name, label string) string {
	if f := mf[name]; f != nil && len(f.Metric) > 0 {
		for _, l := range f.Metric[0].Label {
			if l.GetName() == label {
				return l.GetValue()
			}
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// nodeProbe is one node's own answer: its status, or why there is none.
type nodeProbe struct {
	base   string
	status *cluster.Status
	err    error
	took   time.Duration
}

// probeAll asks every base for its status, at once, each within
// probeTimeout.
func (a *app) probeAll(ctx context.Context, bases []string) []nodeProbe {
	out := make([]nodeProbe, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = a.probe(ctx, base)
		}()
	}
	wg.Wait()
	return out
}

func (a *app) probe(ctx context.Context, base string) nodeProbe {
	p := nodeProbe{base: base}
	c, err := a.nodeAPI(base)
	if err != nil {
		p.err = err
		return p
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	begin := time.Now()
	p.status, p.err = statusOf(ctx, c)
	p.took = time.Since(begin)
	return p
}

// memberBase is the URL of a member's API, in the scheme of --addr.
func (a *app) memberBase(apiAddr string) string {
	if apiAddr == "" {
		return ""
	}
	return a.scheme() + "://" + apiAddr
}
