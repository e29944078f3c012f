package nodes_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

// Small pools make collisions (same id, same key, equal values written
// differently) frequent.
var (
	modelIDs    = []string{"a", "b", "c", "Z", "é", "n-1"}
	modelLabels = []string{"L1", "L2", "L3"}
	modelFields = []string{"owner", "state", "fence", "meta"}
	// Every keyed command gets its own millisecond (nodesMachine.propose),
	// so ledger rows have distinct creation times and the model prunes
	// oldest first without knowing how the FSM orders ties.
	modelKeys = []string{"k0", "k1", "k2", "k3"}
)

type modelNode struct {
	labels   []string          // sorted
	props    map[string]string // field -> canonical JSON
	version  uint64
	created  uint64
	modified uint64
}

func (n *modelNode) node(id string) nodes.Record {
	p := make(map[string]json.RawMessage, len(n.props))
	for k, v := range n.props {
		p[k] = json.RawMessage(v)
	}
	return nodes.Record{NodeID: id, Labels: n.labels, Properties: p, Version: n.version, CreatedIndex: n.created, ModifiedIndex: n.modified}
}

// ledgerRow is the model of one idempotency row: the request as the FSM
// digests it and the result it got.
type ledgerRow struct {
	request string
	ok      bool // created, or swapped
	node    nodes.Record
	at      int64
}

type nodesMachine struct {
	l     *fsmtest.Local
	nodes *nodes.Client

	m           map[string]*modelNode
	ledger      map[string]*ledgerRow // by idempotency key
	events      []fsm.Event           // the retained change feed
	lastSeq     uint64
	index       uint64 // entries proposed
	clock       int64  // the proposer's clock
	now         int64  // the FSM clock
	createdSeen map[string]int
	// sent is the request a key was last recorded for; it outlives the
	// ledger row, so that a resend after pruning runs again.
	sent map[string]any
}

// equateEmpty: the model's nil slices and maps are the FSM's empty ones.
var equateEmpty = cmpopts.EquateEmpty()

// TestNodesModel drives the node primitives through nodes.Client over a bare
// FSM and checks every answer, and after every action the whole state,
// against a plain Go model: maps of nodes, idempotency rows and change
// events, an index counter and the two clocks. Failures print the action
// sequence; rapid shrinks it first.
func TestNodesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := &nodesMachine{
			l: newLocal(t), m: map[string]*modelNode{}, ledger: map[string]*ledgerRow{},
			clock: fsmtest.Epoch, createdSeen: map[string]int{}, sent: map[string]any{},
		}
		s.nodes = nodes.On(s.l)
		t.Repeat(map[string]func(*rapid.T){
			"CreateIfAbsent":  func(t *rapid.T) { s.create(t, genCreate("").Draw(t, "create")) },
			"CompareAndSet":   func(t *rapid.T) { s.cas(t, s.genCAS(t, "")) },
			"Get":             s.get,
			"ByLabel":         s.byLabel,
			"Idempotent":      s.idempotent,
			"AdvanceAndTick":  s.tick,
			"SnapshotRestore": s.snapshotRestore,
			"":                s.check,
		})
	})
}

// Generators.

func genValue() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Map(rapid.SampledFrom([]string{"p1", "p2", "reserved", "", "ü <&>"}), func(s string) any { return s }),
		rapid.Map(rapid.IntRange(-2, 3), func(i int) any { return i }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		// Non-canonical spellings of 1, 1.5, 2, 0 and 1e-6: equal values
		// must compare equal in conditions and replays.
		rapid.Map(rapid.SampledFrom([]string{"1.0", "1.50", "2e0", "-0", "0.000001"}), func(s string) any { return json.Number(s) }),
		rapid.Custom(func(t *rapid.T) any {
			return map[string]any{
				"x":     rapid.IntRange(0, 2).Draw(t, "x"),
				"tags":  rapid.SliceOfN(rapid.SampledFrom([]any{"t1", "t2", nil, false}), 0, 2).Draw(t, "tags"),
				"inner": map[string]any{"y": rapid.Bool().Draw(t, "y")},
			}
		}),
	)
}

// genValueOrNil adds nil: absent in a create, "must be absent" in a
// condition, "delete" in an update.
func genValueOrNil() *rapid.Generator[any] {
	return rapid.OneOf(genValue(), rapid.Just[any](nil))
}

func genCreate(key string) *rapid.Generator[nodes.CreateRequest] {
	return rapid.Custom(func(t *rapid.T) nodes.CreateRequest {
		props := rapid.MapOfN(rapid.SampledFrom(modelFields), genValueOrNil(), 0, 4).Draw(t, "properties")
		return nodes.CreateRequest{
			NodeID:         rapid.SampledFrom(modelIDs).Draw(t, "id"),
			Labels:         rapid.SliceOfNDistinct(rapid.SampledFrom(modelLabels), 0, 3, rapid.ID[string]).Draw(t, "labels"),
			Properties:     props,
			IndexFields:    genIndexFields(t, props),
			IdempotencyKey: key,
		}
	})
}

// genIndexFields draws, now and then, fields to set to the entry's log
// index among those the command does not write otherwise.
func genIndexFields(t *rapid.T, written map[string]any) nodes.IndexFields {
	var free []string
	for _, f := range modelFields {
		if _, taken := written[f]; !taken {
			free = append(free, f)
		}
	}
	if len(free) == 0 || rapid.IntRange(0, 3).Draw(t, "with set_index") != 0 {
		return nodes.IndexFields{}
	}
	return nodes.IndexFields{SetIndex: rapid.SliceOfNDistinct(rapid.SampledFrom(free), 1, 2, rapid.ID[string]).Draw(t, "set_index")}
}

// genCAS draws conditions from the node's current values, from other
// values (often stale) and from "absent".
func (s *nodesMachine) genCAS(t *rapid.T, key string) nodes.CASRequest {
	id := rapid.SampledFrom(modelIDs).Draw(t, "id")
	conds := map[string]any{}
	for _, f := range rapid.SliceOfNDistinct(rapid.SampledFrom(modelFields), 0, 3, rapid.ID[string]).Draw(t, "condition fields") {
		switch rapid.SampledFrom([]string{"current", "other", "absent"}).Draw(t, "condition kind") {
		case "current":
			conds[f] = nil
			if n := s.m[id]; n != nil {
				if v, ok := n.props[f]; ok {
					conds[f] = json.RawMessage(v)
				}
			}
		case "other":
			conds[f] = genValue().Draw(t, "condition value")
		case "absent":
			conds[f] = nil
		}
	}
	updates := rapid.MapOfN(rapid.SampledFrom(modelFields), genValueOrNil(), 1, 3).Draw(t, "updates")
	return nodes.CASRequest{
		NodeID: id, Conditions: conds, Updates: updates,
		IndexFields:    genIndexFields(t, updates),
		IdempotencyKey: key,
	}
}

// canonical is the canonical JSON of a Go value, as the FSM stores it.
func canonical(t *rapid.T, v any) string {
	b, err := canon.Value(v)
	if err != nil {
		t.Fatalf("canonical %v: %v", v, err)
	}
	return string(b)
}

func canonicalMap(t *rapid.T, in map[string]any, dropNull bool) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if c := canonical(t, v); !dropNull || c != "null" {
			out[k] = c
		}
	}
	return out
}

// requestOf is the request as the FSM's digest sees it: two requests that
// normalize alike (label order, number spelling, null properties) are one.
func requestOf(t *rapid.T, req any) string {
	var v any
	switch r := req.(type) {
	case nodes.CreateRequest:
		labels := slices.Clone(r.Labels)
		sort.Strings(labels)
		v = []any{"create", r.NodeID, labels, canonicalMap(t, r.Properties, true), r.SetIndex}
	case nodes.CASRequest:
		v = []any{"cas", r.NodeID, canonicalMap(t, r.Conditions, false), canonicalMap(t, r.Updates, false), r.SetIndex}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("request key: %v", err)
	}
	return string(b)
}

// Model bookkeeping.

// propose accounts for one entry: the next index, and the FSM clock
// moving to the stamp if that is later. A keyed command first gets its own
// millisecond (see modelKeys).
func (s *nodesMachine) propose(keyed bool) {
	if keyed {
		s.advance(1)
	}
	s.index++
	s.now = max(s.now, s.clock)
}

func (s *nodesMachine) advance(ms int64) {
	s.clock += ms
	s.l.Advance(time.Duration(ms) * time.Millisecond)
}

func (s *nodesMachine) emit(kind, id string) {
	s.lastSeq++
	s.events = append(s.events, fsm.Event{Seq: s.lastSeq, Index: s.index, Time: s.now, Kind: kind, Key: id})
}

// fromLedger answers a keyed request from the model ledger: the stored
// result, or idempotency_conflict. done is false when the key is unused.
func (s *nodesMachine) fromLedger(key, request string) (row *ledgerRow, done bool, err error) {
	if key == "" || s.ledger[key] == nil {
		return nil, false, nil
	}
	if row = s.ledger[key]; row.request != request {
		return nil, true, errs.IdempotencyConflict
	}
	return row, true, nil
}

func (s *nodesMachine) record(key, request string, ok bool, n nodes.Record, req any) {
	if key != "" {
		s.ledger[key] = &ledgerRow{request: request, ok: ok, node: n, at: s.now}
		s.sent[key] = req
	}
}

func sameError(t *rapid.T, what string, got, want error) {
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

// Actions.

func (s *nodesMachine) create(t *rapid.T, req nodes.CreateRequest) {
	request := requestOf(t, req)
	s.propose(req.IdempotencyKey != "")
	var want nodes.CreateResult
	row, done, wantErr := s.fromLedger(req.IdempotencyKey, request)
	switch {
	case done && wantErr == nil:
		want = nodes.CreateResult{Created: row.ok, Node: row.node, Replayed: true, TimeMs: row.at}
	case done:
	case s.m[req.NodeID] != nil:
		want = nodes.CreateResult{Created: false, Node: s.m[req.NodeID].node(req.NodeID), TimeMs: s.now}
	default:
		labels := slices.Clone(req.Labels)
		sort.Strings(labels)
		n := &modelNode{labels: labels, props: canonicalMap(t, req.Properties, true), version: 1, created: s.index, modified: s.index}
		setIndex(n.props, req.SetIndex, s.index)
		s.m[req.NodeID] = n
		s.emit("node_create", req.NodeID)
		want = nodes.CreateResult{Created: true, Node: n.node(req.NodeID), TimeMs: s.now}
	}
	if !done {
		s.record(req.IdempotencyKey, request, want.Created, want.Node, req)
	}

	got, err := s.nodes.CreateIfAbsent(bg, req)
	if wantErr != nil {
		sameError(t, "create", err, wantErr)
		return
	}
	if err != nil {
		t.Fatalf("create %+v: %v", req, err)
	}
	if diff := cmp.Diff(&want, got, equateEmpty); diff != "" {
		t.Fatalf("create %+v (-model +fsm):\n%s", req, diff)
	}
	if got.Created && !got.Replayed {
		if s.createdSeen[req.NodeID]++; s.createdSeen[req.NodeID] > 1 {
			t.Fatalf("node %q created twice", req.NodeID)
		}
	}
}

func (s *nodesMachine) cas(t *rapid.T, req nodes.CASRequest) {
	request := requestOf(t, req)
	s.propose(req.IdempotencyKey != "")
	var want nodes.CASResult
	row, done, wantErr := s.fromLedger(req.IdempotencyKey, request)
	n := s.m[req.NodeID]
	switch {
	case done && wantErr == nil:
		want = nodes.CASResult{Swapped: row.ok, Node: row.node, Replayed: true, TimeMs: row.at}
		if !row.ok {
			want.Failed = modelFailures(canonicalMap(t, req.Conditions, false), row.node.Properties)
		}
	case done:
	case n == nil:
		wantErr = errs.NotFound // a failure: not recorded in the ledger
	default:
		holds := true
		for f, c := range canonicalMap(t, req.Conditions, false) {
			have, present := n.props[f]
			if c == "null" && present || c != "null" && (!present || have != c) {
				holds = false
			}
		}
		if holds {
			next := maps.Clone(n.props)
			for f, u := range canonicalMap(t, req.Updates, false) {
				if u == "null" {
					delete(next, f)
				} else {
					next[f] = u
				}
			}
			setIndex(next, req.SetIndex, s.index)
			n.props, n.version, n.modified = next, n.version+1, s.index
			s.emit("node_cas", req.NodeID)
		}
		want = nodes.CASResult{Swapped: holds, Node: n.node(req.NodeID), TimeMs: s.now}
		if !holds {
			want.Failed = modelFailures(canonicalMap(t, req.Conditions, false), want.Node.Properties)
		}
	}
	if !done && wantErr == nil {
		s.record(req.IdempotencyKey, request, want.Swapped, want.Node, req)
	}

	got, err := s.nodes.CompareAndSet(bg, req)
	if wantErr != nil {
		sameError(t, "CAS", err, wantErr)
		return
	}
	if err != nil {
		t.Fatalf("CAS %+v: %v", req, err)
	}
	if diff := cmp.Diff(&want, got, equateEmpty); diff != "" {
		t.Fatalf("CAS %+v (-model +fsm):\n%s", req, diff)
	}
}

// setIndex writes the entry's index into the set_index fields.
func setIndex(props map[string]string, fields []string, index uint64) {
	for _, f := range fields {
		props[f] = strconv.FormatUint(index, 10)
	}
}

// modelFailures is what a CAS that did not swap names: every condition
// the node fails, by field.
func modelFailures(conds map[string]string, props map[string]json.RawMessage) []nodes.Failure {
	var out []nodes.Failure
	for _, f := range sortedKeys(conds) {
		have, present := props[f]
		switch c := conds[f]; {
		case c == "null" && present:
			out = append(out, nodes.Failure{Field: f, Check: "absent", Reason: "present"})
		case c != "null" && !present:
			out = append(out, nodes.Failure{Field: f, Check: "equal", Reason: "missing"})
		case c != "null" && string(have) != c:
			out = append(out, nodes.Failure{Field: f, Check: "equal", Reason: "different"})
		}
	}
	return out
}

func (s *nodesMachine) get(t *rapid.T) {
	id := rapid.SampledFrom(modelIDs).Draw(t, "id")
	c := rapid.SampledFrom([]fsm.Consistency{fsm.Linearizable, fsm.Stale}).Draw(t, "consistency")
	s.checkNode(t, id, c)
}

func (s *nodesMachine) checkNode(t *rapid.T, id string, c fsm.Consistency) {
	got, err := s.nodes.Get(bg, id, c)
	n := s.m[id]
	if n == nil {
		sameError(t, "get "+id, err, errs.NotFound)
		return
	}
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	if diff := cmp.Diff(n.node(id), *got, equateEmpty); diff != "" {
		t.Fatalf("node %s (-model +fsm):\n%s", id, diff)
	}
}

// byLabel reads every page of a label and checks order, completeness,
// page bounds and that each cursor moves strictly forward.
func (s *nodesMachine) byLabel(t *rapid.T) {
	label := rapid.SampledFrom(append(slices.Clone(modelLabels), "L-none")).Draw(t, "label")
	limit := rapid.IntRange(0, 4).Draw(t, "limit")
	bound := limit
	if bound == 0 {
		bound = nodes.MaxLabelPage
	}
	var want []nodes.Record
	for _, id := range sortedKeys(s.m) {
		if slices.Contains(s.m[id].labels, label) {
			want = append(want, s.m[id].node(id))
		}
	}
	wantPages := max(1, (len(want)+bound-1)/bound)

	var got []nodes.Record
	cursor, pages := "", 0
	for {
		pages++
		if pages > wantPages {
			t.Fatalf("label %s, limit %d: more than %d pages for %d nodes", label, limit, wantPages, len(want))
		}
		page, err := s.nodes.ByLabel(bg, nodes.LabelQuery{Label: label, After: cursor, Limit: limit}, fsm.Stale)
		if err != nil {
			t.Fatalf("label %s page %d: %v", label, pages, err)
		}
		if len(page.Nodes) > bound {
			t.Fatalf("page of %d nodes over limit %d", len(page.Nodes), bound)
		}
		for _, n := range page.Nodes {
			if len(got) > 0 && n.NodeID <= got[len(got)-1].NodeID {
				t.Fatalf("label %s: %q after %q; order or cursor progress broken", label, n.NodeID, got[len(got)-1].NodeID)
			}
			got = append(got, n)
		}
		if page.NextCursor == "" {
			break
		}
		if len(page.Nodes) != bound || page.NextCursor == cursor {
			t.Fatalf("cursor %q after a page of %d (limit %d)", page.NextCursor, len(page.Nodes), bound)
		}
		cursor = page.NextCursor
	}
	if pages != wantPages {
		t.Fatalf("label %s, limit %d: %d pages, want %d", label, limit, pages, wantPages)
	}
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Fatalf("label %s (-model +fsm):\n%s", label, diff)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// idempotent sends a keyed create or CAS: the request recorded under the
// key again (a replay, labels reordered so that only the normalized request
// counts; or a fresh run once a tick pruned the row), or a new request (a
// conflict unless it normalizes the same).
func (s *nodesMachine) idempotent(t *rapid.T) {
	key := rapid.SampledFrom(modelKeys).Draw(t, "key")
	mode := rapid.SampledFrom([]string{"resend", "create", "cas"}).Draw(t, "mode")
	if req, ok := s.sent[key]; mode == "resend" && ok {
		switch r := req.(type) {
		case nodes.CreateRequest:
			r.Labels = slices.Clone(r.Labels)
			slices.Reverse(r.Labels)
			s.create(t, r)
		case nodes.CASRequest:
			s.cas(t, r)
		}
		return
	}
	if mode == "cas" {
		s.cas(t, s.genCAS(t, key))
		return
	}
	s.create(t, genCreate(key).Draw(t, "create"))
}

// tick advances the clock and proposes a Tick (sometimes an invalid one,
// which must change nothing but the clock).
func (s *nodesMachine) tick(t *rapid.T) {
	s.advance(rapid.Int64Range(0, 3000).Draw(t, "advance ms"))
	tk := tick(rapid.SampledFrom([]int64{1000, 2500, 5000}).Draw(t, "idem retention"),
		rapid.SampledFrom([]uint64{16, 20, 64}).Draw(t, "feed retain"),
		rapid.SampledFrom([]int{1, 2, fsm.MaxTickBudget}).Draw(t, "budget"))
	valid := rapid.IntRange(0, 5).Draw(t, "valid") != 0
	if !valid {
		tk.Budget = 0
	}
	s.propose(false)
	res := propose(t, s.l, fsm.CmdTick, "", tk)
	if !valid {
		sameError(t, "invalid tick", errOf(res), errs.Invalid)
		return
	}
	if res.Err != nil {
		t.Fatalf("tick %+v: %v", tk, res.Err)
	}

	want := fsm.TickResult{Now: s.now}
	var due []string
	for k, row := range s.ledger {
		if row.at <= s.now-tk.IdemRetentionMs {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool { return s.ledger[due[i]].at < s.ledger[due[j]].at })
	for _, k := range due[:min(len(due), tk.Budget)] {
		delete(s.ledger, k)
		want.IdemPruned++
	}
	if excess := len(s.events) - int(tk.FeedRetain); excess > 0 {
		want.FeedPruned = min(excess, tk.Budget)
		s.events = s.events[want.FeedPruned:]
	}
	want.Backlog = want.IdemPruned == tk.Budget || want.FeedPruned == tk.Budget
	var got fsm.TickResult
	decode(t, res.Result, &got)
	if got != want {
		t.Fatalf("tick %+v: %+v, model says %+v", tk, got, want)
	}
}

// snapshotRestore restores a snapshot into a fresh FSM, checks that it is
// the same state in every way the test can observe, and goes on with it.
func (s *nodesMachine) snapshotRestore(t *rapid.T) {
	orig := s.l.FSM
	first := fsmtest.Snapshot(t, orig)
	fresh := fsmtest.RestoreFresh(t, first, nodes.Module())
	if second := fsmtest.Snapshot(t, fresh); !bytes.Equal(first, second) {
		t.Fatalf("restored FSM snapshots differently")
	}
	fsmtest.AssertSameState(t, orig, fresh)
	if orig.AppliedIndex() != fresh.AppliedIndex() {
		t.Fatalf("applied index %d after restore, want %d", fresh.AppliedIndex(), orig.AppliedIndex())
	}
	queries := []fsm.Query{{Type: fsm.QueryChanges, Payload: log.MustMarshal(fsm.ChangesRequest{})}}
	for _, id := range modelIDs {
		queries = append(queries, fsm.Query{Type: nodes.QueryGet, Payload: log.MustMarshal(nodes.GetQuery{NodeID: id})})
	}
	for _, l := range modelLabels {
		queries = append(queries, fsm.Query{Type: nodes.QueryByLabel, Payload: log.MustMarshal(nodes.LabelQuery{Label: l})})
	}
	for _, q := range queries {
		a, errA := orig.Query(identity.Principal{}, q)
		b, errB := fresh.Query(identity.Principal{}, q)
		if !bytes.Equal(a, b) || errs.CodeOf(errA) != errs.CodeOf(errB) {
			t.Fatalf("query %d %x reads differently after restore: %x, %v vs %x, %v", q.Type, q.Payload, a, errA, b, errB)
		}
	}
	s.l.FSM = fresh
}

// check compares the whole observable state with the model.
func (s *nodesMachine) check(t *rapid.T) {
	f := s.l.FSM
	if n := uint64(len(s.l.Log())); n != s.index || f.AppliedIndex() != s.index {
		t.Fatalf("log has %d entries, FSM applied %d, model proposed %d", n, f.AppliedIndex(), s.index)
	}
	if f.Now() != s.now {
		t.Fatalf("FSM clock %d, model %d", f.Now(), s.now)
	}
	if f.Panics() != 0 {
		t.Fatalf("%d handler panics", f.Panics())
	}
	for _, id := range modelIDs {
		s.checkNode(t, id, fsm.Linearizable)
		if exists, seen := s.m[id] != nil, s.createdSeen[id]; exists != (seen == 1) {
			t.Fatalf("node %q: exists=%v but created %d times", id, exists, seen)
		}
	}
	first := s.lastSeq + 1 - uint64(len(s.events))
	var page fsm.ChangesPage
	if err := fsm.Ask(bg, s.l, fsm.QueryChanges, true, fsm.ChangesRequest{After: first - 1}, &page); err != nil {
		t.Fatalf("changes after %d: %v", first-1, err)
	}
	if page.LastSeq != s.lastSeq {
		t.Fatalf("feed last seq %d, model %d", page.LastSeq, s.lastSeq)
	}
	if diff := cmp.Diff(s.events, page.Events, equateEmpty); diff != "" {
		t.Fatalf("change feed (-model +fsm):\n%s", diff)
	}
	if first >= 2 {
		err := fsm.Ask(bg, s.l, fsm.QueryChanges, true, fsm.ChangesRequest{After: first - 2}, &page)
		sameError(t, "pruned cursor", err, errs.CursorExpired)
	}
}

// TestPropertiesSizeBound pins the properties bound at the byte: a
// property object whose canonical JSON is exactly MaxPropertiesBytes is
// accepted, one byte more is invalid, whatever characters its keys hold
// (canonical JSON keeps <, > and & as they are), on create and after a CAS.
func TestPropertiesSizeBound(t *testing.T) {
	for _, key := range []string{"plain", "a<b>&c"} {
		// fill returns {key: "xx..."} whose canonical JSON is size bytes.
		fill := func(size int) map[string]json.RawMessage {
			empty, err := canon.Value(map[string]string{key: ""})
			if err != nil {
				t.Fatal(err)
			}
			return props(key, `"`+strings.Repeat("x", size-len(empty))+`"`)
		}
		l := newLocal(t)
		for _, tc := range []struct {
			id   string
			size int
			ok   bool
		}{{"at", nodes.MaxPropertiesBytes, true}, {"over", nodes.MaxPropertiesBytes + 1, false}} {
			res := propose(t, l, nodes.CmdCreate, "", nodes.CreateCommand{NodeID: tc.id, Properties: fill(tc.size)})
			if (res.Err == nil) != tc.ok {
				t.Errorf("key %q: create with %d bytes of properties: %v", key, tc.size, res.Err)
			}
		}
		// A CAS that grows a small object to the bound, then past it.
		createNode(t, l, "", "grow", nil, nil)
		for _, tc := range []struct {
			size int
			ok   bool
		}{{nodes.MaxPropertiesBytes, true}, {nodes.MaxPropertiesBytes + 1, false}} {
			res := propose(t, l, nodes.CmdCAS, "", nodes.CASCommand{NodeID: "grow", Updates: fill(tc.size)})
			if (res.Err == nil) != tc.ok {
				t.Errorf("key %q: CAS to %d bytes of properties: %v", key, tc.size, res.Err)
			}
		}
	}
}
