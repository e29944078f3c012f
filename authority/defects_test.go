package authority_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
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

// cliRun runs `arbiter concept args...` against conn and decodes its JSON
// output into out (nil: ignored).
func cliRun(t *testing.T, conn domain.Conn, out any, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := domain.CLIEnv{Stdout: &stdout, Stderr: &stderr, Connect: func(*flag.FlagSet) func() (domain.Conn, error) {
		return func() (domain.Conn, error) { return conn, nil }
	}}
	cli := authority.Domain(nil).CLI
	if err := cli.Run(env, args); err != nil {
		t.Fatalf("concept %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if out != nil {
		if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
			t.Fatalf("concept %s: %v in %s", args[0], err, stdout.String())
		}
	}
	return stdout.String()
}

// The three defects through `arbiter concept`, as a principal with a
// token: materialize without --owner projects into the principal's own
// fragment; a transition with --repo keeps the projection in step, so
// reconcile after a land reports nothing; one made without --repo is
// repaired by `concept sync`; and a release of the landed claim says it
// became a tombstone.
func TestConceptCLIKeepsTheProjectionInStep(t *testing.T) {
	const token = "defects-token-agent-7"
	reg, err := identity.NewRegistry([]identity.PrincipalConfig{{ID: "agent-7", Tenants: []string{clusterTenant}, Roles: []string{identity.RoleMember},
		TokenSHA256: []string{identity.HashToken(token)}}})
	if err != nil {
		t.Fatal(err)
	}
	ps := clusterPolicies(t)
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Principals: reg, Configure: func(_ int, cfg *cluster.Config) {
		cfg.Domains = builtin.With(builtin.Options{ConceptPolicies: ps})
	}})
	conn := cluster.NewRemote(c.Node(0).APIAddr()).WithToken(token)
	repo := t.TempDir()
	owner := (identity.Principal{ID: "agent-7"}).OwnerDigest()
	reconcile := func() authority.ReconcileReport {
		t.Helper()
		var rep authority.ReconcileReport
		cliRun(t, conn, &rep, "reconcile", "--tenant", clusterTenant, "--repo", repo)
		return rep
	}
	clean := func(what string) {
		t.Helper()
		if rep := reconcile(); len(rep.StateMismatches)+len(rep.MissingProjections)+len(rep.OrphanRecords) != 0 {
			t.Fatalf("%s: reconcile reports %+v", what, rep)
		}
	}
	step := func(rec *authority.Record, action string, withRepo bool) authority.TransitionResult {
		t.Helper()
		args := []string{"transition", "--concept-id", rec.ConceptID, "--tenant", clusterTenant, "--reservation", rec.ReservationID,
			"--fingerprint", rec.Fingerprint, "--fence", strconv.FormatUint(rec.Fence, 10), "--action", action}
		if withRepo {
			args = append(args, "--repo", repo)
		}
		var res authority.TransitionResult
		raw := cliRun(t, conn, &res, args...)
		if res.Record.State == authority.Tombstoned && action == "release" && !strings.Contains(raw, `"promoted_to": "tombstoned"`) {
			t.Errorf("concept transition --action release of a landed claim does not say it became a tombstone:\n%s", raw)
		}
		return res
	}

	var tombstones []uint64
	for i, id := range []string{"RMDD-71", "RMDD-72"} {
		var rr authority.ReserveResult
		cliRun(t, conn, &rr, "reserve", "--concept-id", id, "--tenant", clusterTenant, "--request", "req-"+id, "--purpose", "sha256:p")
		var mat authority.Record
		cliRun(t, conn, &mat, "materialize", "--concept-id", id, "--tenant", clusterTenant, "--reservation", rr.Record.ReservationID,
			"--fingerprint", rr.Record.Fingerprint, "--fence", strconv.FormatUint(rr.Record.Fence, 10), "--repo", repo)
		frags := fragmentLines(t, repo)
		if _, shared := frags[fragmentName("")]; shared || len(frags) != 1 || len(frags[fragmentName(owner)]) == 0 {
			t.Fatalf("materialize without --owner (claim %d): fragments %v, want agent-7's own only", i, frags)
		}
		clean("after materialize")

		landed := step(&mat, "land", i == 0)
		if i == 0 {
			// Landed with --repo: the projection followed.
			clean("after land with --repo")
		} else {
			// Landed without: reconcile sees it, and sync repairs it.
			if rep := reconcile(); len(rep.StateMismatches) == 0 {
				t.Fatalf("a land without --repo left no mismatch to repair: %+v", rep)
			}
			var synced authority.Record
			cliRun(t, conn, &synced, "sync", "--concept-id", id, "--tenant", clusterTenant, "--repo", repo)
			if synced.State != authority.Landed {
				t.Fatalf("sync: %+v", synced)
			}
			clean("after sync")
		}

		out := step(landed.Record, "release", true)
		if out.Record.State != authority.Tombstoned || out.PromotedTo != authority.Tombstoned {
			t.Fatalf("release of a landed claim: %+v", out)
		}
		tombstones = append(tombstones, out.Record.Fence)
		clean("after the release became a tombstone")
	}
	view := readViewFile(t, repo)
	if len(view) != 2 || !slices.ContainsFunc(view, func(p authority.ProjectedRecord) bool {
		return p.State == authority.Tombstoned && p.Fence == tombstones[0]
	}) {
		t.Fatalf("view: %+v", view)
	}
	if _, err := os.Stat(filepath.Join(repo, "concepts", "fragments", fragmentName(""))); err == nil {
		t.Fatal("the empty owner's fragment exists")
	}
}
