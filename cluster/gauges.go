package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
)

// domainGauges exports what the domains count of their state (their
// fsm.Module Gauges), read on one read transaction at each scrape: work
// items by status, leases held, host reservations, allocation tasks by
// status, projection leases. Each is arbiter_<name>{domain, status}; the
// labels are closed sets the domains name, never a tenant or an id. The
// names depend on the domains a node runs, so the collector describes
// none up front (an unchecked collector).
type domainGauges struct{ n *Node }

func (domainGauges) Describe(chan<- *prometheus.Desc) {}

func (c domainGauges) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.n.fsm.Gauges() {
		labels, values := []string{"domain"}, []string{g.Domain}
		if g.Status != "" {
			labels, values = append(labels, "status"), append(values, g.Status)
		}
		desc := prometheus.NewDesc("arbiter_"+g.Name, g.Help, labels, nil)
		m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, g.Value, values...)
		if err != nil {
			m = prometheus.NewInvalidMetric(desc, err) // the scrape reports it
		}
		ch <- m
	}
}
