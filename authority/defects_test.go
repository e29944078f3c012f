package authority_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// fragmentName is the file a fragment of owner has (sha256 of the owner
// ref, 16 hex digits).
func fragmentName(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:8]) + ".jsonl"
}

// A materialize whose owner the authority derives from the principal
// (the request leaves owner_ref empty, as an authenticated caller may)
// projects into that owner's own fragment: each principal has its own
// file, none shares the file of the empty owner ref.
func TestMaterializeWithTheOwnerFromThePrincipal(t *testing.T) {
	local, err := fsmtest.New(nodes.Module(nodes.AcceptAdapters(authority.Name)))
	if err != nil {
		t.Fatal(err)
	}
	// As the /v1/concepts routes run it: an in-server adapter of the
	// node primitives, for an authenticated principal.
	svc := authority.NewService(asAdapter{local}, asAdapter{local}, policies(t))
	repo := t.TempDir()
	crs := authority.NewConceptReservationService(svc, repo)
	var owners []string
	for i, who := range []string{"agent-7", "agent-8"} {
		p := identity.Principal{ID: who, Tenants: []string{"tenant-a"}, Roles: []string{identity.RoleMember}}
		ctx := fsm.WithPrincipal(context.Background(), p)
		res, err := svc.Reserve(ctx, request("RMDD-"+strconv.Itoa(40+i), "", "r-"+who))
		if err != nil {
			t.Fatal(err)
		}
		if res.Record.OwnerRef != p.OwnerDigest() {
			t.Fatalf("owner %q, want the principal's digest", res.Record.OwnerRef)
		}
		req := materializeReq(res.Record)
		req.OwnerRef = "" // taken from the principal again
		if _, err := crs.Materialize(ctx, req); err != nil {
			t.Fatal(err)
		}
		owners = append(owners, p.OwnerDigest())
	}
	frags := fragmentLines(t, repo)
	if _, shared := frags[fragmentName("")]; shared {
		t.Fatalf("a materialize wrote the fragment of the empty owner ref: %v", frags)
	}
	for _, o := range owners {
		if lines := frags[fragmentName(o)]; len(lines) != 1 || lines[0].State != materialized {
			t.Errorf("owner %s's fragment: %+v (all: %v)", o, lines, frags)
		}
	}
}

// asAdapter marks what passes through it as the concept authority's, as
// a node's Adapter does.
type asAdapter struct{ l *fsmtest.Local }

func (a asAdapter) Propose(ctx context.Context, cmd log.Command) (*fsm.Response, error) {
	cmd.Adapter = authority.Name
	return a.l.Propose(ctx, cmd)
}

func (a asAdapter) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	q.Adapter = authority.Name
	return a.l.Query(ctx, q)
}

// A release (or expiry) of a landed claim is promoted to a tombstone, as
// the spec requires; the answer says so, also on a retry, instead of
// leaving the caller to find out.
func TestReleaseOfALandedClaimSaysItBecameATombstone(t *testing.T) {
	ctx := context.Background()
	for _, action := range []authority.Action{authority.Release, authority.Expire} {
		a := fixture(t)
		rec := reach(t, a, landed)
		if action == authority.Expire {
			a.Advance(time.Minute + time.Second)
		}
		res, err := a.Transition(ctx, holder(rec, action, rec.Fence))
		if err != nil {
			t.Fatalf("%s of a landed claim: %v", action, err)
		}
		if res.Record.State != tombstoned || res.PromotedTo != tombstoned {
			t.Errorf("%s of a landed claim: state %s, promoted_to %q, want tombstoned, said", action, res.Record.State, res.PromotedTo)
		}
		again, err := a.Transition(ctx, holder(rec, action, rec.Fence))
		if err != nil || !again.Replayed || again.PromotedTo != tombstoned {
			t.Errorf("%s retried: %+v %v", action, again, err)
		}
	}
	// Actions that end in their own state say nothing.
	a := fixture(t)
	rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
	res, err := a.Transition(ctx, holder(rec, authority.Release, rec.Fence))
	if err != nil || res.Record.State != released || res.PromotedTo != "" {
		t.Errorf("release of a reserved claim: %+v %v", res, err)
	}
}
