package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

const conceptTenant = "tenant-rmdd16"

// conceptCluster is a one-node cluster whose authority binds RMDD-1..999,
// with principals when reg is not nil.
func conceptCluster(t *testing.T, reg *identity.Registry) *clustertest.Cluster {
	t.Helper()
	ps, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	return clustertest.New(t, clustertest.Options{Nodes: 1, Principals: reg, Configure: func(_ int, cfg *cluster.Config) {
		cfg.Domains = builtin.With(builtin.Options{ConceptPolicies: ps})
	}})
}

// cliJSON runs `arbiter args...` against env, wants exit 0, and decodes
// its JSON answer into out (nil: ignored); it returns what was printed.
func cliJSON(t *testing.T, env map[string]string, out any, args ...string) string {
	t.Helper()
	r := runCLI(t, env, "", args...)
	if r.status != 0 {
		t.Fatalf("arbiter %s: status %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.status, r.stdout, r.stderr)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(r.stdout), out); err != nil {
			t.Fatalf("arbiter %s: %v in %s", strings.Join(args, " "), err, r.stdout)
		}
	}
	return r.stdout
}

// fragmentName is the file a fragment of owner has.
func fragmentName(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:8]) + ".jsonl"
}

// fragmentLines are the projected records of each fragment file of repo.
func fragmentLines(t *testing.T, repo string) map[string][]authority.ProjectedRecord {
	t.Helper()
	dir := filepath.Join(repo, "concepts", "fragments")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]authority.ProjectedRecord{}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var p authority.ProjectedRecord
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
				t.Fatalf("%s: bad line %q: %v", e.Name(), sc.Text(), err)
			}
			out[e.Name()] = append(out[e.Name()], p)
		}
		f.Close()
	}
	return out
}

func readViewFile(t *testing.T, repo string) []authority.ProjectedRecord {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, "concepts", "view.json"))
	if err != nil {
		t.Fatalf("view.json: %v", err)
	}
	var v struct {
		Records []authority.ProjectedRecord `json:"records"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("view.json %s: %v", raw, err)
	}
	return v.Records
}

// Through `arbiter concept`, as a principal with a token: materialize
// without --owner projects into the principal's own fragment; a
// transition with --repo keeps the projection in step, so reconcile
// after a land reports nothing; one made without --repo is repaired by
// `concept sync`; and a release of the landed claim says it became a
// tombstone. (Ported from authority's own CLI test.)
func TestConceptKeepsTheProjectionInStep(t *testing.T) {
	const token = "defects-token-agent-7"
	reg, err := identity.NewRegistry([]identity.PrincipalConfig{{ID: "agent-7", Tenants: []string{conceptTenant}, Roles: []string{identity.RoleMember},
		TokenSHA256: []string{identity.HashToken(token)}}})
	if err != nil {
		t.Fatal(err)
	}
	c := conceptCluster(t, reg)
	env := map[string]string{"ARBITER_ADDR": c.URL(0), "ARBITER_TOKEN": token}
	repo := t.TempDir()
	owner := (identity.Principal{ID: "agent-7"}).OwnerDigest()
	reconcile := func() authority.ReconcileReport {
		t.Helper()
		var rep authority.ReconcileReport
		cliJSON(t, env, &rep, "concept", "reconcile", "--tenant", conceptTenant, "--repo", repo)
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
		args := []string{"concept", "transition", "--concept-id", rec.ConceptID, "--tenant", conceptTenant, "--reservation", rec.ReservationID,
			"--fingerprint", rec.Fingerprint, "--fence", strconv.FormatUint(rec.Fence, 10), "--action", action}
		if withRepo {
			args = append(args, "--repo", repo)
		}
		var res authority.TransitionResult
		raw := cliJSON(t, env, &res, args...)
		if res.Record.State == authority.Tombstoned && action == "release" && !strings.Contains(raw, `"promoted_to": "tombstoned"`) {
			t.Errorf("concept transition --action release of a landed claim does not say it became a tombstone:\n%s", raw)
		}
		return res
	}

	var tombstones []uint64
	for i, id := range []string{"RMDD-71", "RMDD-72"} {
		var rr authority.ReserveResult
		cliJSON(t, env, &rr, "concept", "reserve", "--concept-id", id, "--tenant", conceptTenant, "--request", "req-"+id, "--purpose", "sha256:p")
		var mat authority.Record
		cliJSON(t, env, &mat, "concept", "materialize", "--concept-id", id, "--tenant", conceptTenant, "--reservation", rr.Record.ReservationID,
			"--fingerprint", rr.Record.Fingerprint, "--fence", strconv.FormatUint(rr.Record.Fence, 10), "--repo", repo)
		frags := fragmentLines(t, repo)
		if _, shared := frags[fragmentName("")]; shared || len(frags) != 1 || len(frags[fragmentName(owner)]) == 0 {
			t.Fatalf("materialize without --owner (claim %d): fragments %v, want agent-7's own only", i, frags)
		}
		clean("after materialize")

		landed := step(&mat, "land", i == 0)
		if i == 0 {
			clean("after land with --repo")
		} else {
			if rep := reconcile(); len(rep.StateMismatches) == 0 {
				t.Fatalf("a land without --repo left no mismatch to repair: %+v", rep)
			}
			var synced authority.Record
			cliJSON(t, env, &synced, "concept", "sync", "--concept-id", id, "--tenant", conceptTenant, "--repo", repo)
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

// `concept policies` reads the replicated set and `concept set-policies
// --file` replaces it with the file's version; reserve binds to it, and
// --purpose-text is sent as its sha256: digest. Another request for the
// held id exits 3, a stale fence exits 3, a wrong flag exits 2.
func TestConceptCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(_ int, cfg *cluster.Config) {
		cfg.Domains = builtin.With(builtin.Options{})
	}})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}
	var none authority.PoliciesResult
	cliJSON(t, env, &none, "concept", "policies")
	if none.Configured {
		t.Fatalf("a cluster without policies: %+v", none)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, []byte(`{"version": 6, "policies": [{"namespace": "RMDD", "prefix": "SEARCH", "min": 1, "max": 9, "policy_version": "s"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var set authority.PoliciesResult
	cliJSON(t, env, &set, "concept", "set-policies", "--file", path)
	if !set.Changed || set.Version != 6 || set.Source != authority.SourceAdmin {
		t.Fatalf("set-policies: %+v", set)
	}
	var got authority.PoliciesResult
	cliJSON(t, env, &got, "concept", "policies", "--stale")
	if !got.Configured || len(got.Policies) != 1 || got.Policies[0].Prefix != "SEARCH" {
		t.Fatalf("policies after set-policies: %+v", got)
	}
	var rr authority.ReserveResult
	cliJSON(t, env, &rr, "concept", "reserve", "--concept-id", "RMDD-SEARCH-3", "--tenant", "t", "--owner", "o", "--request", "r",
		"--purpose-text", "search ranking", "--provenance", "a,b", "--provenance", "c", "--ttl", "1h")
	if rr.Record.PolicyVersion != "s" || rr.Record.Prefix != "SEARCH" || !rr.Created {
		t.Fatalf("reserve under the set: %+v", rr.Record)
	}
	sum := sha256.Sum256([]byte("search ranking"))
	if rr.Record.PurposeDigest != "sha256:"+hex.EncodeToString(sum[:]) || !slices.Equal(rr.Record.ProvenanceRefs, []string{"a", "b", "c"}) {
		t.Fatalf("--purpose-text and --provenance: %+v", rr.Record)
	}
	if rr.Record.ExpiresAtMs-rr.Record.ReservedAtMs != 3600_000 {
		t.Fatalf("--ttl 1h: reserved %d, expires %d", rr.Record.ReservedAtMs, rr.Record.ExpiresAtMs)
	}
	// The same request again replays; another request is refused: exit 3.
	var again authority.ReserveResult
	cliJSON(t, env, &again, "concept", "reserve", "--concept-id", "RMDD-SEARCH-3", "--tenant", "t", "--owner", "o", "--request", "r",
		"--purpose-text", "search ranking", "--provenance", "a,b,c", "--ttl", "1h")
	if !again.Replayed {
		t.Fatalf("the same request again: %+v", again)
	}
	if r := runCLI(t, env, "", "concept", "reserve", "--concept-id", "RMDD-SEARCH-3", "--tenant", "t", "--owner", "o2",
		"--purpose", "sha256:x"); r.status != exitNotTaken || !strings.Contains(r.stdout, `"conflict"`) {
		t.Fatalf("another request for a held id: status %d, stdout %s, stderr %s", r.status, r.stdout, r.stderr)
	}
	// A stale fence: exit 3.
	if r := runCLI(t, env, "", "concept", "transition", "--concept-id", "RMDD-SEARCH-3", "--tenant", "t", "--owner", "o",
		"--reservation", rr.Record.ReservationID, "--fingerprint", rr.Record.Fingerprint, "--fence", strconv.FormatUint(rr.Record.Fence+1000, 10),
		"--action", "land"); r.status != exitNotTaken {
		t.Fatalf("a stale fence: status %d, %s", r.status, r.stderr)
	}
	// reserve-next takes the first free number.
	var next authority.ReserveResult
	cliJSON(t, env, &next, "concept", "reserve-next", "--namespace", "RMDD", "--prefix", "SEARCH", "--from", "3", "--to", "5",
		"--tenant", "t", "--owner", "o", "--purpose", "sha256:x")
	if next.Record.ConceptID != "RMDD-SEARCH-4" {
		t.Fatalf("reserve-next: %+v", next.Record)
	}
	var page authority.RecordPage
	cliJSON(t, env, &page, "concept", "list", "--tenant", "t", "--limit", "1")
	if len(page.Records) != 1 || page.NextCursor == "" {
		t.Fatalf("list --limit 1: %+v", page)
	}
	var one authority.Record
	cliJSON(t, env, &one, "concept", "get", "--concept-id", "RMDD-SEARCH-4", "--tenant", "t")
	if one.Fence != next.Record.Fence {
		t.Fatalf("get: %+v", one)
	}
	// Wrong command lines: nothing is sent, exit 2, one line and a pointer.
	for _, args := range [][]string{
		{"concept", "reserve", "--concept-id", "RMDD-SEARCH-5", "--tenant", "t", "--purpose", "sha256:x", "--action", "land"},
		{"concept", "reserve", "--concept-id", "RMDD-SEARCH-5", "--tenant", "t"},                                                 // no purpose
		{"concept", "reserve", "--concept-id", "RMDD-SEARCH-5", "--tenant", "t", "--purpose", "x", "--purpose-text", "y"},        // two
		{"concept", "transition", "--concept-id", "RMDD-SEARCH-5", "--tenant", "t", "--fence", "x", "--action", "land"},          // not a number
		{"concept", "materialize", "--concept-id", "RMDD-SEARCH-5", "--tenant", "t", "--reservation", "r", "--fingerprint", "f"}, // no fence, repo
		{"concept", "no-such-command"},
	} {
		r := runCLI(t, env, "", args...)
		if r.status != exitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 1 || !strings.Contains(r.stderr, "--help'") {
			t.Errorf("arbiter %s: status %d, stderr %q; want %d, one line and see '... --help'", strings.Join(args, " "), r.status, r.stderr, exitUsage)
		}
	}
	// A reserve the cluster refuses as invalid (no policy): exit 2.
	if r := runCLI(t, env, "", "concept", "reserve", "--concept-id", "GOC-1", "--tenant", "t", "--owner", "o", "--purpose", "sha256:x"); r.status != exitUsage {
		t.Fatalf("an id no policy covers: status %d, %s", r.status, r.stderr)
	}
}

// --help of a concept command lists its own flags and the connection
// flags, not another command's.
func TestConceptHelpListsOnlyItsFlags(t *testing.T) {
	r := runCLI(t, nil, "", "concept", "materialize", "--help")
	if r.status != 0 {
		t.Fatalf("materialize --help: %+v", r)
	}
	for _, want := range []string{"--fence", "--repo", "--reservation", "--addr", "--token", "--output"} {
		if !strings.Contains(r.stdout, want+" ") {
			t.Errorf("materialize --help does not list %s:\n%s", want, r.stdout)
		}
	}
	for _, other := range []string{"--action", "--after", "--namespace", "--ttl", "--json"} {
		if strings.Contains(r.stdout, other+" ") {
			t.Errorf("materialize --help lists %s, a flag of another command:\n%s", other, r.stdout)
		}
	}
}
