package authority_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
)

// repoFiles reads every file under dir, by path relative to dir.
func repoFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(raw)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fragmentLines returns every fragment's lines, by file name.
func fragmentLines(t *testing.T, repo string) map[string][]authority.ProjectedRecord {
	t.Helper()
	out := map[string][]authority.ProjectedRecord{}
	for rel, body := range repoFiles(t, repo) {
		if !strings.HasPrefix(rel, filepath.Join("concepts", "fragments")+string(filepath.Separator)) {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			var p authority.ProjectedRecord
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("%s: bad line %q: %v", rel, sc.Text(), err)
			}
			out[filepath.Base(rel)] = append(out[filepath.Base(rel)], p)
		}
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
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("view.json %s: %v", raw, err)
	}
	return v.Records
}

func projectionOf(r *authority.Record) authority.ProjectedRecord {
	return authority.ProjectedRecord{ConceptID: r.ConceptID, Namespace: r.Namespace, PolicyVersion: r.PolicyVersion,
		ReservationID: r.ReservationID, Fence: r.Fence, State: r.State, Visibility: r.Visibility, AtMs: r.UpdatedAtMs}
}

func materializeReq(r *authority.Record) authority.MaterializeRequest {
	return authority.MaterializeRequest{ConceptID: r.ConceptID, TenantRef: r.TenantRef, OwnerRef: r.OwnerRef,
		ReservationID: r.ReservationID, Fingerprint: r.Fingerprint, ExpectedFence: r.Fence}
}

// allLines flattens fragmentLines.
func allLines(m map[string][]authority.ProjectedRecord) []authority.ProjectedRecord {
	var out []authority.ProjectedRecord
	for _, l := range m {
		out = append(out, l...)
	}
	return out
}

func TestMaterializeProjects(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	repo := t.TempDir()
	svc := authority.NewConceptReservationService(a, repo)
	rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))

	got, err := svc.Materialize(ctx, materializeReq(rec))
	if err != nil {
		t.Fatalf("materialize: %v", err)
	}
	if got.State != materialized || !follows(got, rec) {
		t.Fatalf("materialize: %+v", got)
	}
	if native := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(native, got) {
		t.Fatalf("native record %+v, materialize returned %+v", native, got)
	}
	want := []authority.ProjectedRecord{projectionOf(got)}
	frags := fragmentLines(t, repo)
	if len(frags) != 1 || !reflect.DeepEqual(allLines(frags), want) {
		t.Fatalf("fragments %+v, want one file holding %+v", frags, want)
	}
	if v := readViewFile(t, repo); !reflect.DeepEqual(v, want) {
		t.Fatalf("view %+v, want %+v", v, want)
	}
	before := repoFiles(t, repo)

	// The same call again is a replay and projects nothing new.
	again, err := svc.Materialize(ctx, materializeReq(rec))
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("materialize retry: %+v %v", again, err)
	}
	if after := repoFiles(t, repo); !reflect.DeepEqual(after, before) {
		t.Fatalf("a replayed materialize changed the projection:\n%v\n%v", before, after)
	}

	// A stale or foreign materialize fails and projects nothing.
	stale := materializeReq(got) // fence 2: the claim is materialized
	_, err = svc.Materialize(ctx, stale)
	wantCode(t, "materialize of a materialized claim", err, errs.CodeConflict)
	foreign := materializeReq(rec)
	foreign.OwnerRef = "mallory"
	_, err = svc.Materialize(ctx, foreign)
	wantCode(t, "materialize by another owner", err, errs.CodeStaleFence)
	if after := repoFiles(t, repo); !reflect.DeepEqual(after, before) {
		t.Fatalf("a refused materialize changed the projection:\n%v\n%v", before, after)
	}

	// Project of a later state appends one line; again, nothing.
	rec3 := mustStep(t, a, got, authority.Land)
	for i := 0; i < 2; i++ {
		if err := svc.Project("alice", rec3); err != nil {
			t.Fatal(err)
		}
	}
	lines := allLines(fragmentLines(t, repo))
	if len(lines) != 2 || lines[0] != want[0] || lines[1] != projectionOf(rec3) {
		t.Fatalf("fragment after projecting the landing: %+v", lines)
	}
	if v := readViewFile(t, repo); len(v) != 1 || v[0] != projectionOf(rec3) {
		t.Fatalf("view after projecting the landing: %+v", v)
	}
}

// A process that dies after the native transition and before the
// projection is repaired by calling Materialize again with the fence it
// held.
func TestMaterializeRepairsACrashBetweenTheSteps(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	repo := t.TempDir()
	svc := authority.NewConceptReservationService(a, repo)
	rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
	committed := mustStep(t, a, rec, authority.Materialize) // the "crashed" first attempt
	if _, err := os.Stat(filepath.Join(repo, "concepts")); !os.IsNotExist(err) {
		t.Fatalf("the transition alone wrote a projection: %v", err)
	}
	got, err := svc.Materialize(ctx, materializeReq(rec))
	if err != nil || !reflect.DeepEqual(got, committed) {
		t.Fatalf("repairing materialize: %+v %v, want the committed record", got, err)
	}
	want := []authority.ProjectedRecord{projectionOf(committed)}
	if lines := allLines(fragmentLines(t, repo)); !reflect.DeepEqual(lines, want) {
		t.Fatalf("fragment after repair: %+v, want %+v", lines, want)
	}
	if v := readViewFile(t, repo); !reflect.DeepEqual(v, want) {
		t.Fatalf("view after repair: %+v", v)
	}
	// A crash after the fragment line but before the view: the view is
	// regenerated on the retry.
	if err := os.Remove(filepath.Join(repo, "concepts", "view.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Materialize(ctx, materializeReq(rec)); err != nil {
		t.Fatal(err)
	}
	if lines := allLines(fragmentLines(t, repo)); !reflect.DeepEqual(lines, want) {
		t.Fatalf("fragment after the second repair: %+v", lines)
	}
	if v := readViewFile(t, repo); !reflect.DeepEqual(v, want) {
		t.Fatalf("view after the second repair: %+v", v)
	}
	if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, committed) {
		t.Fatalf("repairs changed the native record: %+v", got)
	}
}

// Nothing in the working tree names a tenant, owner, request, design or
// provenance ref, or a digest of the request.
func TestProjectionIsPrivacySafe(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	repo := t.TempDir()
	svc := authority.NewConceptReservationService(a, repo)
	req := authority.ReserveRequest{
		ConceptID: "RMDD-27", TenantRef: "SECRET-TENANT", OwnerRef: "SECRET-OWNER", RequestRef: "SECRET-REQUEST",
		RepositoryRef: "SECRET-REPO", LaneRef: "SECRET-LANE", DesignRef: "SECRET-DESIGN",
		ProvenanceRefs: []string{"SECRET-PROV"}, PurposeDigest: "SECRET-PURPOSE",
	}
	rec := mustReserve(t, a, req)
	m, err := svc.Materialize(ctx, materializeReq(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Project(req.OwnerRef, mustStep(t, a, m, authority.Land)); err != nil {
		t.Fatal(err)
	}
	files := repoFiles(t, repo)
	if len(files) != 2 {
		t.Fatalf("files %v, want one fragment and the view", files)
	}
	for name, body := range files {
		for _, secret := range []string{"SECRET", "secret", rec.Fingerprint, rec.Fingerprint[strings.IndexByte(rec.Fingerprint, ':')+1:]} {
			if strings.Contains(name, secret) || strings.Contains(body, secret) {
				t.Errorf("%s reveals %q:\n%s", name, secret, body)
			}
		}
		for _, key := range []string{"tenant", "owner", "request", "design", "provenance", "purpose", "fingerprint", "repository_ref", "lane"} {
			if strings.Contains(body, `"`+key) {
				t.Errorf("%s has a %q field:\n%s", name, key, body)
			}
		}
	}
	// Every record is exactly the projected fields.
	keys := []string{"at_ms", "concept_id", "fence", "namespace", "policy_version", "reservation_id", "state", "visibility"}
	var objects []map[string]any
	for name, body := range files {
		if strings.HasSuffix(name, ".jsonl") {
			for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
				var o map[string]any
				if err := json.Unmarshal([]byte(line), &o); err != nil {
					t.Fatal(err)
				}
				objects = append(objects, o)
			}
			continue
		}
		var v struct{ Records []map[string]any }
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, v.Records...)
	}
	if len(objects) != 3 {
		t.Fatalf("%d projected records, want 2 fragment lines and 1 view record", len(objects))
	}
	for _, o := range objects {
		var got []string
		for k := range o {
			got = append(got, k)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, keys) {
			t.Errorf("projected record keys %v, want %v", got, keys)
		}
	}
}

// The view merges every owner's fragment, keeping per concept the record
// with the highest fence, whichever file holds it.
func TestViewMergesFragmentsByHighestFence(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	repo := t.TempDir()
	svc := authority.NewConceptReservationService(a, repo)

	// alice materializes RMDD-27, then releases it; bob reclaims and
	// materializes it; carol and alice hold others.
	alice := mustReserve(t, a, request("RMDD-27", "alice", "a1"))
	aliceM, err := svc.Materialize(ctx, materializeReq(alice))
	if err != nil {
		t.Fatal(err)
	}
	aliceRel := mustStep(t, a, aliceM, authority.Release)
	bob := mustReserve(t, a, request("RMDD-27", "bob", "b1"))
	bobM, err := svc.Materialize(ctx, materializeReq(bob))
	if err != nil {
		t.Fatal(err)
	}
	carol := mustReserve(t, a, request("GOC-19", "carol", "c1"))
	carolM, err := svc.Materialize(ctx, materializeReq(carol))
	if err != nil {
		t.Fatal(err)
	}
	alice2 := mustReserve(t, a, request("RMDD-1500", "alice", "a2"))
	alice2M, err := svc.Materialize(ctx, materializeReq(alice2))
	if err != nil {
		t.Fatal(err)
	}
	// alice projects her release late: a lower fence than bob's claim.
	if err := svc.Project("alice", aliceRel); err != nil {
		t.Fatal(err)
	}
	frags := fragmentLines(t, repo)
	if len(frags) != 3 {
		t.Fatalf("%d fragment files, want one per owner: %v", len(frags), frags)
	}
	want := []authority.ProjectedRecord{projectionOf(carolM), projectionOf(alice2M), projectionOf(bobM)}
	sort.Slice(want, func(i, j int) bool { return want[i].ConceptID < want[j].ConceptID })
	if v := readViewFile(t, repo); !reflect.DeepEqual(v, want) {
		t.Fatalf("view:\n%+v\nwant:\n%+v", v, want)
	}
	// Regenerating from the same fragments gives the same bytes.
	before := repoFiles(t, repo)
	if err := svc.RegenerateView(); err != nil {
		t.Fatal(err)
	}
	if after := repoFiles(t, repo); !reflect.DeepEqual(after, before) {
		t.Fatal("RegenerateView of unchanged fragments changed the view")
	}
	// A fragment line with a higher fence wins over an earlier view.
	bobL := mustStep(t, a, bobM, authority.Land)
	if err := svc.Project("bob", bobL); err != nil {
		t.Fatal(err)
	}
	for _, p := range readViewFile(t, repo) {
		if p.ConceptID == "RMDD-27" && p != projectionOf(bobL) {
			t.Fatalf("view holds %+v for RMDD-27, want bob's landing %+v", p, projectionOf(bobL))
		}
	}
}

// RegenerateView replaces the view by rename: no temporary file is left,
// whether it succeeds or fails.
func TestRegenerateViewIsAtomic(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	repo := t.TempDir()
	svc := authority.NewConceptReservationService(a, repo)
	if err := svc.RegenerateView(); err != nil {
		t.Fatalf("view of no fragments: %v", err)
	}
	if v := readViewFile(t, repo); len(v) != 0 {
		t.Fatalf("view of no fragments: %+v", v)
	}
	for i, id := range []string{"RMDD-1", "RMDD-2", "RMDD-3"} {
		rec := mustReserve(t, a, request(id, "alice", id))
		if _, err := svc.Materialize(ctx, materializeReq(rec)); err != nil {
			t.Fatal(err)
		}
		if v := readViewFile(t, repo); len(v) != i+1 {
			t.Fatalf("view after %d materializations: %+v", i+1, v)
		}
	}
	wantOnly := func(what string, names ...string) {
		t.Helper()
		entries, err := os.ReadDir(filepath.Join(repo, "concepts"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if !reflect.DeepEqual(got, names) {
			t.Fatalf("%s: concepts/ holds %v, want %v", what, got, names)
		}
	}
	wantOnly("after regenerations", "fragments", "view.json")

	// A view that cannot be replaced: the error is returned and the
	// temporary file removed.
	view := filepath.Join(repo, "concepts", "view.json")
	if err := os.Remove(view); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(view, "blocker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := svc.RegenerateView(); err == nil {
		t.Fatal("RegenerateView over a directory succeeded")
	}
	wantOnly("after a failed regeneration", "fragments", "view.json")
	if st, err := os.Stat(view); err != nil || !st.IsDir() {
		t.Fatalf("the failed regeneration replaced the blocker: %v", err)
	}
}

// The projection reads bounded inputs and refuses what is over a bound
// or malformed instead of guessing.
func TestProjectionBounds(t *testing.T) {
	a := fixture(t)
	rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
	frag := func(t *testing.T, repo string) string {
		dir := filepath.Join(repo, "concepts", "fragments")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, "0000000000000000.jsonl")
	}
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, path string)
		code  errs.Code
	}{
		{"fragment over 64 MiB", func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(64<<20 + 1); err != nil { // sparse: costs no disk
				t.Fatal(err)
			}
		}, errs.CodeTooLarge},
		{"line over 1 MiB", func(t *testing.T, path string) {
			line := `{"concept_id":"RMDD-1","namespace":"` + strings.Repeat("A", 1<<20) + `"}` + "\n"
			if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"malformed line", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("{\"concept_id\": \"RMDD-1\"}\nnot json\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, errs.CodeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			svc := authority.NewConceptReservationService(a, repo)
			tc.write(t, frag(t, repo))
			err := svc.RegenerateView()
			if err == nil {
				t.Fatal("RegenerateView accepted it")
			}
			if tc.code != "" {
				wantCode(t, tc.name, err, tc.code)
			}
			if err := svc.Project("alice", rec); err == nil {
				t.Fatal("Project over a bad fragment directory succeeded")
			}
			if _, err := os.Stat(filepath.Join(repo, "concepts", "view.json")); !os.IsNotExist(err) {
				t.Fatalf("a view was written from bad fragments: %v", err)
			}
			_, err = svc.ReconcileProjection(context.Background(), authority.ReconcileRequest{TenantRef: "tenant-a", MaxRecords: 10})
			if err == nil {
				t.Fatal("ReconcileProjection accepted it")
			}
		})
	}
	// The owner's own fragment over the bound stops its projection.
	t.Run("own fragment over 64 MiB", func(t *testing.T) {
		repo := t.TempDir()
		svc := authority.NewConceptReservationService(a, repo)
		if err := svc.Project("alice", rec); err != nil {
			t.Fatal(err)
		}
		var own string
		for name := range fragmentLines(t, repo) {
			own = filepath.Join(repo, "concepts", "fragments", name)
		}
		if err := os.Truncate(own, 64<<20+1); err != nil {
			t.Fatal(err)
		}
		err := svc.Project("alice", rec)
		wantCode(t, "project into an oversized fragment", err, errs.CodeTooLarge)
		if st, err := os.Stat(own); err != nil || st.Size() != 64<<20+1 {
			t.Fatalf("the oversized fragment was appended to: %v %v", st.Size(), err)
		}
	})
}
