package workitem_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/google/go-cmp/cmp"
)

// The reference model of work-item admission: plain maps and the rules
// of the issue, applied one command at a time, written again from the
// rules rather than from the code. TestWorkItemModel (machine_test.go)
// drives the service and the model side by side.

type mKey struct{ tenant, id string }

type mEdge struct{ tenant, dep, dependent string }

type mQueued struct {
	index          uint64
	tenant, id, st string
}

// mIdem is one idempotency ledger row: what the first success answered.
type mIdem struct {
	fingerprint string
	result      any
}

type wiModel struct {
	clock, now int64  // the proposer's clock; FSM time
	index      uint64 // the last applied log index
	feed       uint64 // the change feed's last sequence
	items      map[mKey]*workitem.WorkItem
	// deadlineRow says an in-flight item still has its deadline row
	// (Tick drops a claimed item's when it passes).
	deadlineRow map[mKey]bool
	graphs      map[[2]string]uint64
	flying      map[string]int64
	edges       map[mEdge]uint64 // -> the dependent's admitted index
	queue       []mQueued        // the cascade queue, in order
	ledger      map[string]*mIdem
}

func newModel(clock int64) *wiModel {
	return &wiModel{clock: clock, items: map[mKey]*workitem.WorkItem{}, deadlineRow: map[mKey]bool{},
		graphs: map[[2]string]uint64{}, flying: map[string]int64{}, edges: map[mEdge]uint64{}, ledger: map[string]*mIdem{}}
}

// apply is what the FSM does first with every command it decodes: the
// next index, and the clock at the stamp.
func (m *wiModel) apply() {
	m.index++
	m.now = max(m.now, m.clock)
}

// mErr is a decided failure: the code, and the detail the model pins.
type mErr struct {
	code   errs.Code
	reason string // detail.reason of a dependency error
	field  string // detail.field, when the model knows it
}

func (e *mErr) Error() string { return fmt.Sprintf("%s (%s %s)", e.code, e.reason, e.field) }

func fail(code errs.Code) *mErr { return &mErr{code: code} }

// ledgerKey is a keyed command's row: the tenant's, whoever sends it.
func ledgerKey(op, tenant, graph, key string) string {
	return strings.Join([]string{op, tenant, graph, key}, "\x00")
}

// fingerprint is what makes two keyed commands the same request: the
// command type and everything the payload holds.
func fingerprint(typ string, v any) string {
	b, _ := json.Marshal(v)
	return typ + string(b)
}

// consult answers a keyed command of p in tenant from the ledger: done
// with the first result (replayed) or idempotency_conflict, or, before
// the ledger is read, forbidden for a principal outside the tenant.
func (m *wiModel) consult(p identity.Principal, tenant, key, fp string) (any, *mErr, bool) {
	if !p.InTenant(tenant) {
		return nil, fail(errs.CodeForbidden), true
	}
	row, ok := m.ledger[key]
	switch {
	case !ok:
		return nil, nil, false
	case row.fingerprint != fp:
		return nil, fail(errs.CodeIdempotencyConflict), true
	}
	return row.result, nil, true
}

func mayChange(p identity.Principal, tenant string) *mErr {
	if !p.InTenant(tenant) || !p.HasRole(identity.RoleMember) {
		return fail(errs.CodeForbidden)
	}
	return nil
}

func deadlineOf(it *workitem.WorkItem) int64 {
	if it.DeadlineUnix == nil {
		return 0
	}
	return *it.DeadlineUnix * 1000
}

// emit counts an outbox event.
func (m *wiModel) emit() uint64 {
	m.feed++
	return m.feed
}

// admit is SubmitWorkItem (one spec) and SubmitWorkItems (several):
// the whole admission or the first failure, which changes nothing.
func (m *wiModel) admit(p identity.Principal, key, tenant, graph string, specs []workitem.SubmitRequest) (*workitem.BatchResult, *mErr) {
	if e := mayChange(p, tenant); e != nil {
		return nil, e
	}
	type plan struct {
		it      *workitem.WorkItem
		waiting []string
		cap     int64
	}
	var plans []plan
	planned := map[string]*workitem.WorkItem{}
	seq := m.graphs[[2]string{tenant, graph}]
	flying := m.flying[tenant]
	for i, s := range specs {
		if s.DeadlineUnix != nil && *s.DeadlineUnix*1000 <= m.now {
			return nil, &mErr{code: errs.CodeInvalid, field: "deadline_unix"}
		}
		id := s.WorkItemID
		if id == "" {
			id = fmt.Sprintf("wi-%d-%d", m.index, i)
		}
		if m.items[mKey{tenant, id}] != nil || planned[id] != nil {
			return nil, fail(errs.CodeConflict)
		}
		deps := workitem.Dependencies{Total: int64(len(s.DependsOn))}
		var waiting []string
		for _, d := range s.DependsOn {
			dep := planned[d]
			if dep == nil {
				dep = m.items[mKey{tenant, d}]
			}
			switch {
			case dep == nil:
				return nil, &mErr{code: errs.CodeInvalid, reason: "dependency_missing"}
			case dep.Status == workitem.StatusFailed || dep.Status == workitem.StatusCancelled:
				return nil, &mErr{code: errs.CodeInvalid, reason: "dependency_failed"}
			case dep.Status == workitem.StatusSucceeded:
				deps.Satisfied++
			default:
				waiting = append(waiting, d)
			}
		}
		if flying+int64(i)+1 > s.MaxTenantInFlight {
			return nil, fail(errs.CodeExhausted)
		}
		seq++
		k := key
		if s.IdempotencyKey != "" {
			k = s.IdempotencyKey
		}
		meta := json.RawMessage(`{}`)
		if len(s.Metadata) > 0 {
			meta = json.RawMessage(canonicalMeta[string(s.Metadata)])
		}
		it := &workitem.WorkItem{TenantRef: tenant, GraphRef: graph, WorkItemID: id, CommandSequence: seq, Kind: s.Kind,
			Priority: s.Priority, Status: workitem.StatusPending, DependsOn: nonNil(s.DependsOn), Dependencies: deps,
			InputRef: s.InputRef, CommandDigest: s.CommandDigest, PolicyDigest: s.PolicyDigest, CatalogDigest: s.CatalogDigest,
			ModelDigest: s.ModelDigest, MaxAttempts: s.MaxAttempts, DeadlineUnix: s.DeadlineUnix, Metadata: meta,
			ProvenanceRefs: nonNil(s.ProvenanceRefs), IdempotencyKey: k, SubmittedBy: p.ID, CreatedAtMs: m.now, UpdatedAtMs: m.now,
			AdmittedIndex: m.index}
		planned[id] = it
		plans = append(plans, plan{it, waiting, s.MaxTenantInFlight})
	}
	out := &workitem.BatchResult{TenantRef: tenant, GraphRef: graph, IdempotencyKey: key, Created: true,
		BatchSequenceRange: workitem.SequenceRange{First: plans[0].it.CommandSequence, Last: seq}}
	for i, pl := range plans {
		it := pl.it
		it.OutboxID = m.emit()
		k := mKey{tenant, it.WorkItemID}
		m.items[k] = it
		m.deadlineRow[k] = it.DeadlineUnix != nil
		for _, d := range pl.waiting {
			m.edges[mEdge{tenant, d, it.WorkItemID}] = it.AdmittedIndex
		}
		out.Results = append(out.Results, workitem.SubmitResult{WorkItemID: it.WorkItemID, TenantRef: tenant, GraphRef: graph,
			Status: workitem.StatusPending, Created: true, CommandSequence: it.CommandSequence, IdempotencyKey: it.IdempotencyKey,
			Dependencies: it.Dependencies, Quota: workitem.Quota{InFlight: flying + int64(i) + 1, Cap: pl.cap}, OutboxID: it.OutboxID,
			CommandDigest: it.CommandDigest, ProvenanceRefs: it.ProvenanceRefs, ChangedIDs: []string{it.WorkItemID}})
	}
	m.graphs[[2]string{tenant, graph}] = seq
	m.flying[tenant] = flying + int64(len(plans))
	return out, nil
}

// canonicalMeta is the canonical form of each metadata the test sends.
var canonicalMeta = map[string]string{`{}`: `{}`, `{"b": 1, "a": [true, null]}`: `{"a":[true,null],"b":1}`}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// claimable lists the items a claim may take, best first.
func (m *wiModel) claimable(tenant, graph string, kinds []string, id string) []*workitem.WorkItem {
	var out []*workitem.WorkItem
	for k, it := range m.items {
		d := deadlineOf(it)
		if k.tenant != tenant || it.GraphRef != graph || !ready(*it) || (d != 0 && m.now >= d) ||
			(len(kinds) > 0 && !slices.Contains(kinds, it.Kind)) || (id != "" && it.WorkItemID != id) {
			continue
		}
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Priority > b.Priority || a.Priority == b.Priority && a.CommandSequence < b.CommandSequence
	})
	return out
}

func (m *wiModel) claim(p identity.Principal, r workitem.ClaimRequest) (*workitem.ClaimResult, *mErr) {
	if e := mayChange(p, r.TenantRef); e != nil {
		return nil, e
	}
	graph := graphOr(r.GraphRef)
	c := m.claimable(r.TenantRef, graph, r.Kinds, r.WorkItemID)
	if len(c) == 0 {
		return nil, fail(errs.CodeNotFound)
	}
	it := c[0]
	it.Status, it.Attempt, it.Fence = workitem.StatusClaimed, it.Attempt+1, m.index
	it.OwnerRef, it.ClaimedBy, it.ClaimExpiresAtMs, it.UpdatedAtMs = r.OwnerRef, p.ID, m.now+r.TTLMs, m.now
	m.emit()
	return &workitem.ClaimResult{WorkItem: *it, Attempt: it.Attempt, Fence: it.Fence, ExpiresAtMs: it.ClaimExpiresAtMs}, nil
}

func graphOr(g string) string {
	if g == "" {
		return workitem.DefaultGraph
	}
	return g
}

func (m *wiModel) complete(p identity.Principal, r workitem.CompleteRequest) (*workitem.WorkItem, *mErr) {
	if e := mayChange(p, r.TenantRef); e != nil {
		return nil, e
	}
	it := m.items[mKey{r.TenantRef, r.WorkItemID}]
	if it == nil {
		return nil, fail(errs.CodeNotFound)
	}
	same := it.Attempt == r.Attempt && it.Fence == r.Fence
	claimer := it.ClaimedBy == p.ID || p.HasRole(identity.RoleController)
	switch {
	case same && it.Status == r.Outcome && it.Reason == "" && it.ResultRef == r.ResultRef && !claimer:
		return nil, fail(errs.CodeForbidden)
	case same && it.Status == r.Outcome && it.Reason == "" && it.ResultRef == r.ResultRef:
		return it, nil
	case same && it.Status != workitem.StatusPending && it.Status != workitem.StatusClaimed:
		return nil, fail(errs.CodeConflict) // ended otherwise
	case it.Status != workitem.StatusClaimed || !same:
		return nil, fail(errs.CodeStaleFence)
	case it.ClaimedBy != p.ID && !p.HasRole(identity.RoleController):
		return nil, fail(errs.CodeForbidden)
	case m.now >= it.ClaimExpiresAtMs:
		return nil, fail(errs.CodeExpired)
	}
	it.ResultRef = r.ResultRef
	m.end(it, r.Outcome, "")
	m.cascade(mQueued{m.index, it.TenantRef, it.WorkItemID, r.Outcome}, workitem.InlineCascade)
	return it, nil
}

func (m *wiModel) cancel(p identity.Principal, r workitem.CancelRequest) (*workitem.WorkItem, *mErr) {
	if e := mayChange(p, r.TenantRef); e != nil {
		return nil, e
	}
	it := m.items[mKey{r.TenantRef, r.WorkItemID}]
	switch {
	case it == nil:
		return nil, fail(errs.CodeNotFound)
	case it.Status == workitem.StatusCancelled:
		return it, nil
	case it.Status != workitem.StatusPending && it.Status != workitem.StatusClaimed:
		return nil, fail(errs.CodeConflict)
	}
	m.end(it, workitem.StatusCancelled, r.Reason)
	m.cascade(mQueued{m.index, it.TenantRef, it.WorkItemID, workitem.StatusCancelled}, workitem.InlineCascade)
	return it, nil
}

// end terminalizes an in-flight item and queues its cascade.
func (m *wiModel) end(it *workitem.WorkItem, status, reason string) {
	it.Status, it.Reason, it.EndedAtMs, it.UpdatedAtMs = status, reason, m.now, m.now
	m.deadlineRow[mKey{it.TenantRef, it.WorkItemID}] = false
	m.flying[it.TenantRef]--
	m.queue = append(m.queue, mQueued{m.index, it.TenantRef, it.WorkItemID, status})
	// The queue is in end order: index, then tenant and id.
	sort.Slice(m.queue, func(i, j int) bool {
		a, b := m.queue[i], m.queue[j]
		if a.index != b.index {
			return a.index < b.index
		}
		return a.tenant < b.tenant || a.tenant == b.tenant && a.id < b.id
	})
	m.emit()
}

// cascade reaches at most budget dependents of q's item and dequeues it
// once none is left; it returns the rows spent.
func (m *wiModel) cascade(q mQueued, budget int) int {
	var deps []string
	for e := range m.edges {
		if e.tenant == q.tenant && e.dep == q.id {
			deps = append(deps, e.dependent)
		}
	}
	sort.Strings(deps)
	more := len(deps) > budget
	if more {
		deps = deps[:budget]
	}
	for _, d := range deps {
		e := mEdge{q.tenant, q.id, d}
		index := m.edges[e]
		delete(m.edges, e)
		it := m.items[mKey{q.tenant, d}]
		if it == nil || it.AdmittedIndex != index || it.Status != workitem.StatusPending {
			continue
		}
		if q.st == workitem.StatusSucceeded {
			it.Dependencies.Satisfied++
			it.UpdatedAtMs = m.now
			continue
		}
		m.end(it, workitem.StatusCancelled, workitem.ReasonDependencyFailed)
	}
	spent := len(deps)
	if !more && spent < budget {
		for i, e := range m.queue {
			if e == q {
				m.queue = append(m.queue[:i:i], m.queue[i+1:]...)
				break
			}
		}
		spent++
	}
	return spent
}

// timed lists in-flight items by a time (at, tenant, id), those at or
// before limit, at most budget.
func (m *wiModel) timed(at func(*workitem.WorkItem) (int64, bool), limit int64, budget int) []*workitem.WorkItem {
	var out []*workitem.WorkItem
	for _, it := range m.items {
		if t, ok := at(it); ok && t <= limit {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := at(out[i])
		b, _ := at(out[j])
		if a != b {
			return a < b
		}
		if out[i].TenantRef != out[j].TenantRef {
			return out[i].TenantRef < out[j].TenantRef
		}
		return out[i].WorkItemID < out[j].WorkItemID
	})
	if len(out) > budget {
		out = out[:budget]
	}
	return out
}

// tick is the module's Tick: deadlines, claim expiry, cascade, retention.
func (m *wiModel) tick(budget int) {
	for _, it := range m.timed(func(it *workitem.WorkItem) (int64, bool) {
		return deadlineOf(it), m.deadlineRow[mKey{it.TenantRef, it.WorkItemID}]
	}, m.now, budget) {
		if it.Status == workitem.StatusPending {
			m.end(it, workitem.StatusFailed, workitem.ReasonDeadlineExceeded)
		} else {
			m.deadlineRow[mKey{it.TenantRef, it.WorkItemID}] = false
		}
	}
	for _, it := range m.timed(func(it *workitem.WorkItem) (int64, bool) {
		return it.ClaimExpiresAtMs, it.Status == workitem.StatusClaimed
	}, m.now, budget) {
		switch d := deadlineOf(it); {
		case it.Attempt >= it.MaxAttempts:
			m.end(it, workitem.StatusFailed, workitem.ReasonAttemptsExhausted)
		case d != 0 && m.now >= d:
			m.end(it, workitem.StatusFailed, workitem.ReasonDeadlineExceeded)
		default:
			it.Status, it.OwnerRef, it.ClaimedBy, it.ClaimExpiresAtMs, it.UpdatedAtMs = workitem.StatusPending, "", "", 0, m.now
			m.emit()
		}
	}
	queue := slices.Clone(m.queue)
	if len(queue) > budget {
		queue = queue[:budget]
	}
	left := budget
	for _, q := range queue {
		if left <= 0 {
			break
		}
		left -= m.cascade(q, left)
	}
	for _, it := range m.timed(func(it *workitem.WorkItem) (int64, bool) {
		return it.EndedAtMs, it.EndedAtMs != 0
	}, m.now-workitem.TerminalRetention.Milliseconds(), budget) {
		if m.queued(it.TenantRef, it.WorkItemID) {
			break
		}
		delete(m.items, mKey{it.TenantRef, it.WorkItemID})
	}
}

func (m *wiModel) queued(tenant, id string) bool {
	for _, q := range m.queue {
		if q.tenant == tenant && q.id == id {
			return true
		}
	}
	return false
}

// compare lists how the stored state differs from the model.
func (m *wiModel) compare(st storedState) []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	if st.Index != m.index || st.Now != m.now {
		badf("applied index %d at %d; the model is at %d, %d", st.Index, st.Now, m.index, m.now)
	}
	seen := map[mKey]bool{}
	for _, it := range st.Items {
		k := mKey{it.TenantRef, it.WorkItemID}
		seen[k] = true
		want := m.items[k]
		if want == nil {
			badf("stored item %s/%s the model does not have", k.tenant, k.id)
			continue
		}
		if diff := cmp.Diff(tidy(*want), tidy(it)); diff != "" {
			badf("item %s/%s (-model +stored):\n%s", k.tenant, k.id, diff)
		}
	}
	for k := range m.items {
		if !seen[k] {
			badf("the model has item %s/%s, the FSM does not", k.tenant, k.id)
		}
	}
	graphs := map[[2]string]uint64{}
	for _, g := range st.Graphs {
		graphs[[2]string{g.TenantRef, g.GraphRef}] = g.LastSequence
	}
	if !mapsEqual(graphs, m.graphs) {
		badf("graph sequences %v; the model's %v", graphs, m.graphs)
	}
	flying := map[string]int64{}
	for _, r := range st.Tenants {
		flying[r.TenantRef] = r.InFlight
	}
	if !mapsEqual(flying, m.flying) {
		badf("in flight %v; the model's %v", flying, m.flying)
	}
	edges := map[mEdge]uint64{}
	for _, e := range st.Edges {
		edges[mEdge{e.TenantRef, e.DependencyID, e.DependentID}] = e.DependentIndex
	}
	if !mapsEqual(edges, m.edges) {
		badf("edges %v; the model's %v", edges, m.edges)
	}
	var queue []mQueued
	for _, c := range st.Cascade {
		queue = append(queue, mQueued{c.Index, c.TenantRef, c.WorkItemID, c.Status})
	}
	if !slices.Equal(queue, m.queue) {
		badf("cascade queue %v; the model's %v", queue, m.queue)
	}
	for _, d := range st.Deadlines {
		if !m.deadlineRow[mKey{d.TenantRef, d.WorkItemID}] {
			badf("deadline row of %s/%s the model dropped", d.TenantRef, d.WorkItemID)
		}
	}
	return bad
}

func tidy(it workitem.WorkItem) workitem.WorkItem {
	it.DependsOn, it.ProvenanceRefs = nonNil(it.DependsOn), nonNil(it.ProvenanceRefs)
	return it
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
