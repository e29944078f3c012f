package projection_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/projection"
)

// Principals of the unit tests.
var (
	admin    = identity.Principal{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}}
	agent    = identity.Principal{ID: "agent-7", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}}
	agent2   = identity.Principal{ID: "agent-8", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}}
	router   = identity.Principal{ID: "route-producer", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}}
	frontier = identity.Principal{ID: "frontier-producer", Tenants: []string{"a"}, Roles: []string{identity.RoleMember}}
	reader   = identity.Principal{ID: "agent-7-reader", Tenants: []string{"a"}, Roles: []string{identity.RoleReader}}
	stranger = identity.Principal{ID: "stranger", Tenants: []string{"*"}, Roles: []string{identity.RoleController}}
)

func as(p identity.Principal) context.Context { return fsm.WithPrincipal(context.Background(), p) }

// digest is a digest of sha256:<hex of s>, for the attested tuple.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("sha256:%x", sum)
}

// attested is a valid tuple; kind varies it.
func attested(kind string) projection.Attested {
	return projection.Attested{SchemaVersion: "1", Capability: "hook-advisory", HarnessType: "claude-code",
		InstanceKeyDigest: digest("instance"), WorkspaceKeyDigest: digest("workspace"), ProjectionKind: kind}
}

// bothChannels binds each channel to its producer.
var bothChannels = []projection.ChannelBinding{
	{Channel: projection.ChannelLifecycleFrontier, Producer: frontier.ID},
	{Channel: projection.ChannelComputedRoute, Producer: router.ID},
}

// env is one FSM without raft, with a runtime root, and its service.
type env struct {
	t    *testing.T
	l    *fsmtest.Local
	s    *projection.Service
	root string
}

func newEnv(t *testing.T, opts ...projection.Option) *env {
	t.Helper()
	root := t.TempDir()
	d := projection.Domain(append([]projection.Option{projection.WithRuntimeRoot(root)}, opts...)...)
	l, err := fsmtest.New(d.Module())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, l: l, s: projection.NewService(l, l), root: root}
}

// setTTL configures lease_ttl_ms, which every test that acquires does
// itself: there is no default, not even here.
func (e *env) setTTL(ms int64) {
	e.t.Helper()
	if _, err := e.s.SetConfig(as(admin), projection.ConfigRequest{LeaseTTLMs: ms}); err != nil {
		e.t.Fatalf("set lease_ttl_ms: %v", err)
	}
}

func (e *env) target(kind string) string {
	e.t.Helper()
	res, err := e.s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested(kind), Channels: bothChannels})
	if err != nil {
		e.t.Fatalf("register target: %v", err)
	}
	return res.TargetID
}

// envelope is a valid envelope of channel at watermark w, expiring at
// expires, with body.
func envelope(channel string, w uint64, expires int64, body any) json.RawMessage {
	b, err := json.Marshal(map[string]any{
		"schema": channel, "not_authority": true, "watermark": w, "expires_at_ms": expires,
		"provenance": map[string]any{"producer": channel, "run": w}, "citations": []any{fmt.Sprintf("cite-%d", w)}, "body": body,
	})
	if err != nil {
		panic(err)
	}
	return b
}

// later is an expiry an hour after the test clock's start.
const later = fsmtest.Epoch + 3_600_000

func (e *env) submit(p identity.Principal, target, channel string, w uint64, body any) (*projection.SubmitResult, error) {
	return e.s.Submit(as(p), projection.SubmitRequest{TargetID: target, Channel: channel, SourceWatermark: w, Envelope: envelope(channel, w, later, body)})
}

func (e *env) acquire(target string) *projection.Lease {
	e.t.Helper()
	l, err := e.s.Acquire(as(agent), projection.AcquireRequest{TargetID: target, HolderInstanceDigest: digest("holder")})
	if err != nil {
		e.t.Fatalf("acquire: %v", err)
	}
	return l
}

func fenceOf(l *projection.Lease) projection.FenceRequest {
	return projection.FenceRequest{TargetID: l.TargetID, Token: l.Token, FencingEpoch: l.FencingEpoch}
}

func wantCode(t fsmtest.Fataler, what string, err error, code errs.Code) {
	t.Helper()
	if errs.CodeOf(err) != code {
		t.Fatalf("%s: error %v, want code %q", what, err, code)
	}
}

// stored is the state as a snapshot holds it, row by row.
type stored struct{ fsmtest.Stored }

func readStored(t fsmtest.Fataler, f *fsm.FSM) stored {
	t.Helper()
	return stored{fsmtest.ReadStored(t, f)}
}

// digest hashes every table but the FSM's bookkeeping row (index and
// clock): the state hash of "what changed".
func (s stored) digest() [32]byte { return s.Digest(func(name string) bool { return name != "meta" }) }

// unchanged runs f and fails the test if it changed any state.
func (e *env) unchanged(what string, f func()) {
	e.t.Helper()
	before := readStored(e.t, e.l.FSM).digest()
	f()
	if after := readStored(e.t, e.l.FSM).digest(); after != before {
		e.t.Fatalf("%s changed the state", what)
	}
}

// tablesWith lists the tables whose rows contain b.
func (s stored) tablesWith(b []byte) []string {
	var out []string
	for name, rows := range s.Rows {
		for _, r := range rows {
			if bytes.Contains(r, b) {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// readCurrent reads the target's current.json under e's root.
func readCurrent(e *env, id string) ([]byte, error) {
	path, err := projection.TargetPath(e.root, id)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

func canonical(b []byte) bool { return canon.IsCanonical(b) }

func canonJSON(b []byte) ([]byte, error) { return canon.JSON(b) }
