package capacity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/arbiterhq/arbiter/identity"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Graphs. Every cell, lease, idempotency key, read and reclaim page is in
// one (graph, tenant): graph_ref is a namespace inside a tenant, which
// the request names, and two graphs of one tenant share nothing but the
// tenant's active-lease count (MaxActivePerTenant bounds the tenant's
// rows, and a tenant makes up graphs freely).
//
// DefaultGraph names the graph of a request that names none, the graph
// every cell and lease written before graphs belongs to. Inside the
// state machine it is the empty graph_ref: rows, command payloads,
// idempotency scopes, cursors and change events of the default graph are
// byte for byte what they were before graphs, so old snapshots load and
// old logs replay unchanged. Results leave graph_ref out for it.
const DefaultGraph = "default"

// graphKey is the graph a request names as the state machine keys it:
// "" for the default graph, by either name.
func graphKey(graph string) string {
	if graph == DefaultGraph {
		return ""
	}
	return graph
}

// checkGraph validates the graph of a command or query payload: an
// optional identifier, the default graph spelled "" (one spelling, so
// that a retry has the same request digest).
func checkGraph(graph string) error {
	if graph == DefaultGraph {
		return errs.Errorf(errs.CodeInvalid, "graph_ref %q is sent as an empty graph_ref", DefaultGraph)
	}
	return bounds.OptionalIdentifier("graph_ref", graph)
}

// graphsSince is the version of each command from which its payload may
// name a graph: the commands' versions when graphs came.
func graphsSince(t log.Type) uint16 {
	if t == CmdAcquire {
		return 3 // 2: fences from the log index
	}
	return 2
}

// commandVersion is the version the service sends a command at: the one
// that brought graphs for a graph other than the default one (so that a
// cluster that has not enabled it refuses the command on every replica),
// 1 otherwise (the enabled version decides the behaviour).
func commandVersion(t log.Type, graph string) uint16 {
	if graph == "" {
		return 1
	}
	return graphsSince(t)
}

// decodeScoped decodes a command's payload. Once the cluster enables the
// version that brought graphs, the payload may name one and is decoded
// into full; before, it is decoded into body, what the payload held then,
// so that a graph_ref is refused as the unknown field it was and a log
// written then replays as it was applied.
func decodeScoped(tx *fsm.Tx, cmd *log.Command, full, body any) error {
	since := graphsSince(cmd.Type)
	if tx.EnabledVersion(cmd.Type) >= since {
		return fsm.DecodePayload(cmd.Payload, full)
	}
	err := fsm.DecodePayload(cmd.Payload, body)
	if err != nil && cmd.Version >= since {
		return errs.Errorf(errs.CodeUnavailable, "graph_ref needs command %d at version %d, which this cluster does not enable", cmd.Type, since)
	}
	return err
}

// graphCommand is the prologue every capacity command shares, as an
// fsm.Typed for its payload P: P holds the payload from before graphs
// (body: what decodeScoped decodes below the version that brought
// them) and names a graph and a tenant (scope). The payload is decoded
// by decodeScoped; after its validation the graph is checked, and, for
// an operation op whose keys are scoped ("" for none), the idempotency
// scope. The caller adds Validate, the access it needs and the body.
func graphCommand[P any](body func(*P) any, scope func(*P) (graph, tenant string), op string) fsm.Typed[P] {
	checks := []func(*fsm.Tx, *log.Command, *P) error{
		func(_ *fsm.Tx, _ *log.Command, c *P) error {
			graph, _ := scope(c)
			return checkGraph(graph)
		},
	}
	if op != "" {
		checks = append(checks, func(tx *fsm.Tx, cmd *log.Command, c *P) error {
			graph, tenant := scope(c)
			return checkIdemScope(tx, cmd, op, graph, tenant)
		})
	}
	return fsm.Typed[P]{
		Decode: func(tx *fsm.Tx, cmd *log.Command, c *P) error { return decodeScoped(tx, cmd, c, body(c)) },
		Checks: checks,
	}
}

// idemScope is the idempotency scope of an operation in (graph, tenant),
// of fixed length whatever the refs (the envelope bounds a scope to 512
// bytes). The default graph's is the scope keys had before graphs (a
// digest of the tenant alone), so that they replay after an upgrade;
// any other graph's is a digest of tenant and graph (neither holds a NUL,
// so no two pairs and no tenant alone share one).
func idemScope(op, graph, tenant string) string {
	in := tenant
	if graph != "" {
		in = tenant + "\x00" + graph
	}
	sum := sha256.Sum256([]byte(in))
	return "capacity/" + op + "/" + hex.EncodeToString(sum[:scopeHashLen/2])
}

// scopeHashLen is the length of the digest in a scope: 32 hex digits.
const scopeHashLen = 32

// Tenant-keyed idempotency ledgers. Until the versions below, the FSM
// keys the ledger rows of a keyed command by principal as well as scope
// and key, so a second principal of the tenant repeating an acquire's
// key ran a second acquire (and, with the first's owner digest, was
// refused). From them on a keyed command carries tenantScope, the FSM
// keys its rows by (scope, key), that is by (graph, tenant, key), after
// checking that the principal may act for the tenant the scope names
// (fsm.CommandSpec.LedgerTenant), and any member of the tenant who
// repeats a key gets the first result (Replayed) or
// idempotency_conflict. A request first applied before the switch and
// retried after finds its row through LedgerLegacyScope.
const (
	acquireTenantLedger = 4 // capacity_acquire
	leasesTenantLedger  = 3 // capacity_renew, capacity_release
)

// tenantLedgerSince is the version from which commands of type t key
// their ledger by tenant (t is acquire, renew or release).
func tenantLedgerSince(t log.Type) uint16 {
	if t == CmdAcquire {
		return acquireTenantLedger
	}
	return leasesTenantLedger
}

// scopeFor is the scope a keyed command of (graph, tenant) carries:
// idemScope, followed by "/" and the tenant when keyed (at most 562
// bytes, within log.MaxScopeBytes).
func scopeFor(op, graph, tenant string, keyed bool) string {
	return hashedScope(op).Keyed(idemScope(op, graph, tenant), tenant, keyed)
}

// hashedScope is the format of op's scopes: its Tenant and Legacy are
// the FSM's LedgerTenant and LedgerLegacyScope for op's command.
func hashedScope(op string) fsm.HashedScope {
	return fsm.HashedScope{Prefix: "capacity/" + op + "/", HashLen: scopeHashLen}
}

// tenantKeyed is spec, a keyed command of operation op, with its ledger
// keyed by tenant from its tenant-keyed version on, answering members
// only (the role acquire, renew and release ask for).
func tenantKeyed(spec fsm.CommandSpec, op string) fsm.CommandSpec {
	spec.LedgerTenant, spec.LedgerTenantFrom, spec.LedgerLegacyScope = hashedScope(op).Tenant, tenantLedgerSince(spec.Type), hashedScope(op).Legacy
	spec.LedgerRole = identity.RoleMember
	return spec
}

// scopeMismatch begins the message of the refusal of a keyed command
// whose scope is not its operation's in its graph and tenant.
const scopeMismatch = "idempotency scope is not the one of"

// checkIdemScope refuses a keyed command whose idempotency scope is not
// its operation's in its graph and tenant: the FSM does not trust the
// proposer with it, so that a key never reaches across graphs. It applies
// from the version that brought graphs on (decodeScoped's full payload);
// from the tenant-keyed version on the scope is tenantScope, and the
// refusal names detail.field idempotency_key (below it, the refusal is
// the one that version answered, without detail).
func checkIdemScope(tx *fsm.Tx, cmd *log.Command, op, graph, tenant string) error {
	v := tx.EnabledVersion(cmd.Type)
	if v < graphsSince(cmd.Type) || cmd.IdemKey == "" {
		return nil
	}
	keyed := v >= tenantLedgerSince(cmd.Type)
	if cmd.IdemScope == scopeFor(op, graph, tenant, keyed) {
		return nil
	}
	e := errs.Errorf(errs.CodeInvalid, scopeMismatch+" %s in graph %q of tenant %q", op, graph, tenant)
	if keyed {
		e.Detail = map[string]any{"field": "idempotency_key"}
	}
	return e
}

// scopeRefused reports whether err refuses the idempotency scope of a
// command the service built: the FSM's refusal of a scope that names no
// tenant (detail.reason idempotency_scope), or the handler's of a scope
// its enabled version does not take (detail.field idempotency_key from
// the tenant-keyed versions on; below them, the message alone says so,
// since that answer is pinned as it was).
func scopeRefused(err error) bool {
	e := errs.From(err)
	if e == nil || e.Code != errs.CodeInvalid {
		return false
	}
	return e.Detail["field"] == "idempotency_key" || strings.HasPrefix(e.Message, scopeMismatch)
}

// scopeKey names (graph, tenant) where a cursor is bound to it: the
// tenant alone for the default graph, as before graphs.
func scopeKey(graph, tenant string) string {
	if graph == "" {
		return tenant
	}
	return tenant + "\x00" + graph
}

// emit appends a change event for key (a lease or cell id) of tenant. An
// event in a graph other than the default one carries the graph as its
// payload, {"graph_ref": ...}, since ids are per graph.
func emit(tx *fsm.Tx, kind, graph, key, tenant string) error {
	if graph == "" {
		tx.Emit(kind, key, tenant)
		return nil
	}
	payload, err := json.Marshal(struct {
		GraphRef string `json:"graph_ref"`
	}{graph})
	if err == nil {
		_, err = tx.EmitPayload(kind, key, tenant, payload)
	}
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "change event %s: %v", kind, err)
	}
	return nil
}

// graphIndex indexes a row's graph as memdb.StringFieldIndex indexes a
// string field, except that the empty string, the default graph, is a
// value too (StringFieldIndex leaves a row whose field is empty out).
type graphIndex struct{}

// inGraph is a row that is in a graph.
type inGraph interface{ graph() string }

func (graphIndex) FromObject(obj any) (bool, []byte, error) {
	r, ok := obj.(inGraph)
	if !ok {
		return false, nil, fmt.Errorf("graph index: %T has no graph", obj)
	}
	return true, append([]byte(r.graph()), 0), nil
}

func (graphIndex) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("graph index: %d arguments, want 1", len(args))
	}
	g, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("graph index: argument is %T, not a string", args[0])
	}
	return append([]byte(g), 0), nil
}
