package fsm

// Gauge is one value a module's Gauges reports: the series
// arbiter_<Name>{domain="<module>"}, with status="<Status>" when Status
// is set. Labels are closed sets the module names (never a tenant or an
// id), so the series are bounded; a name is reported with a Status at
// every call or at none.
type Gauge struct {
	Name   string
	Help   string
	Status string
	Value  float64
}

// DomainGauge is a Gauge with the module that reported it.
type DomainGauge struct {
	Domain string
	Gauge
}

type moduleGauges struct {
	name string
	fn   func(rt *ReadTx) []Gauge
}

// Gauges reads every module's gauges on one read transaction of the
// committed state, in module name order. A module whose Gauges panics is
// left out (and the panic counted as a handler panic): a scrape never
// stops the node.
func (f *FSM) Gauges() []DomainGauge {
	if len(f.gauges) == 0 {
		return nil
	}
	txn := f.db.Load().Txn(false)
	m := readMeta(txn)
	rt := &ReadTx{Now: m.Now, Index: m.Index, Txn: txn}
	var out []DomainGauge
	for _, g := range f.gauges {
		out = append(out, f.moduleGauges(g, rt)...)
	}
	return out
}

func (f *FSM) moduleGauges(g moduleGauges, rt *ReadTx) (out []DomainGauge) {
	defer func() {
		if r := recover(); r != nil {
			f.panics.Add(1)
			f.logger.Error("a module's gauges panicked", "domain", g.name, "panic", r)
			out = nil
		}
	}()
	for _, v := range g.fn(rt) {
		out = append(out, DomainGauge{Domain: g.name, Gauge: v})
	}
	return out
}
