package workitem_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
)

var bg = context.Background()

// digest is a valid command digest; policy, catalog and model digests.
var (
	digest        = "sha256:" + strings.Repeat("ab", 32)
	policyDigest  = "sha256:" + strings.Repeat("01", 32)
	catalogDigest = "sha256:" + strings.Repeat("02", 32)
	modelDigest   = "sha256:" + strings.Repeat("03", 32)
)

func newService(t testing.TB) (*fsmtest.Local, *workitem.Service) {
	t.Helper()
	l, err := fsmtest.New(workitem.Module())
	if err != nil {
		t.Fatal(err)
	}
	return l, workitem.NewService(l, l)
}

// req is a valid submit request of tenant t with key and depends_on.
func req(key string, deps ...string) workitem.SubmitRequest {
	return workitem.SubmitRequest{TenantRef: "t", IdempotencyKey: key, CommandDigest: digest, Kind: "build",
		DependsOn: deps, InputRef: "input:" + key, PolicyDigest: policyDigest, CatalogDigest: catalogDigest, ModelDigest: modelDigest,
		MaxAttempts: 2, MaxTenantInFlight: 100}
}

// as runs a call as principal p.
func as(p identity.Principal) context.Context { return fsm.WithPrincipal(bg, p) }

var (
	member   = identity.Principal{ID: "m1", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}}
	member2  = identity.Principal{ID: "m2", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}}
	reader   = identity.Principal{ID: "r", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}}
	ctl      = identity.Principal{ID: "ctl", Tenants: []string{"t"}, Roles: []string{identity.RoleController}}
	outsider = identity.Principal{ID: "o", Tenants: []string{"u"}, Roles: []string{identity.RoleMember}}
)

func mustSubmit(t testing.TB, s *workitem.Service, r workitem.SubmitRequest) *workitem.SubmitResult {
	t.Helper()
	res, err := s.Submit(bg, r)
	if err != nil {
		t.Fatalf("submit %s: %v", r.IdempotencyKey, err)
	}
	return res
}

func mustClaim(t testing.TB, s *workitem.Service, r workitem.ClaimRequest) *workitem.ClaimResult {
	t.Helper()
	res, err := s.Claim(bg, r)
	if err != nil {
		t.Fatalf("claim %+v: %v", r, err)
	}
	return res
}

func claimReq(owner string) workitem.ClaimRequest {
	return workitem.ClaimRequest{TenantRef: "t", OwnerRef: owner, TTLMs: 10_000}
}

func get(t testing.TB, s *workitem.Service, id string) workitem.WorkItem {
	t.Helper()
	res, err := s.Get(bg, workitem.GetRequest{TenantRef: "t", WorkItemID: id}, fsm.Linearizable)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return res.WorkItem
}

func tick(t testing.TB, l *fsmtest.Local, budget int) {
	t.Helper()
	res, err := l.Propose(bg, log.Command{Type: fsm.CmdTick, Version: 1,
		Payload: log.MustMarshal(fsm.Tick{Budget: budget, FeedRetain: 1 << 20, IdemRetentionMs: 1 << 40})})
	if err != nil || res.Err != nil {
		t.Fatalf("tick: %v %v", err, res.Err)
	}
}

// contentHash is the FSM's content hash (every row but bookkeeping).
func contentHash(t testing.TB, f *fsm.FSM) string {
	t.Helper()
	_, h, err := f.StateHashes()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Content)
}

func checkInvariants(t testing.TB, f *fsm.FSM) { t.Helper(); checkStored(t, f) }

// proposerFunc is a Proposer made of a function.
type proposerFunc func(log.Command) (*fsm.Response, error)

func (f proposerFunc) Propose(_ context.Context, cmd log.Command) (*fsm.Response, error) {
	return f(cmd)
}
