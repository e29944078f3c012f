package authority

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
)

// ConceptReservationService is what a repository manager calls: the
// authority for decisions, plus the local, auditable projection of its own
// claims in a repository working tree:
//
//	<repo>/concepts/fragments/<owner>.jsonl  append-only, one record a line
//	<repo>/concepts/view.json                generated from all fragments
//
// The projection never allocates or releases an id; it only mirrors what
// the authority decided, and can always be regenerated.
type ConceptReservationService struct {
	auth Authority
	repo string
}

// NewConceptReservationService projects into the working tree at repo.
func NewConceptReservationService(auth Authority, repo string) *ConceptReservationService {
	return &ConceptReservationService{auth: auth, repo: repo}
}

// Bounds of the local projection.
const (
	maxFragmentBytes = 64 << 20
	maxFragmentFiles = 10_000
)

// ProjectedRecord is the privacy-safe line a fragment holds: no tenant,
// owner, request, design or provenance refs, no digests.
type ProjectedRecord struct {
	ConceptID     string     `json:"concept_id"`
	Namespace     string     `json:"namespace"`
	PolicyVersion string     `json:"policy_version"`
	ReservationID string     `json:"reservation_id"`
	Fence         uint64     `json:"fence"`
	State         State      `json:"state"`
	Visibility    Visibility `json:"visibility"`
	AtMs          int64      `json:"at_ms"`
}

func projected(r *Record) ProjectedRecord {
	return ProjectedRecord{
		ConceptID: r.ConceptID, Namespace: r.Namespace, PolicyVersion: r.PolicyVersion,
		ReservationID: r.ReservationID, Fence: r.Fence, State: r.State, Visibility: r.Visibility, AtMs: r.UpdatedAtMs,
	}
}

// MaterializeRequest names the claim to materialize (as a transition).
type MaterializeRequest struct {
	ConceptID     string `json:"concept_id"`
	TenantRef     string `json:"tenant_ref"`
	OwnerRef      string `json:"owner_ref"`
	ReservationID string `json:"reservation_id"`
	Fingerprint   string `json:"fingerprint"`
	ExpectedFence uint64 `json:"expected_fence"`
}

// Materialize performs the fenced transition to materialized, then appends
// the record to the caller's own fragment and regenerates the view. If the
// process dies between the two steps, calling Materialize again with the
// same fence finds the committed transition (a replay) and repeats only the
// projection, which is idempotent.
func (s *ConceptReservationService) Materialize(ctx context.Context, req MaterializeRequest) (*Record, error) {
	res, err := s.Transition(ctx, TransitionRequest{
		ConceptID: req.ConceptID, TenantRef: req.TenantRef, OwnerRef: req.OwnerRef,
		ReservationID: req.ReservationID, Fingerprint: req.Fingerprint,
		ExpectedFence: req.ExpectedFence, Action: Materialize,
	})
	if err != nil {
		return nil, err
	}
	return res.Record, nil
}

// Transition performs a fenced transition, then projects the record into
// the owner's fragment and regenerates the view when the claim has a
// projection to keep (it was materialized): after a land, tombstone,
// release or expiry the projection says what the authority decided, and
// reconciling finds nothing to report. A retry after a crash between the
// two steps replays the transition and repeats only the projection.
//
// The fragment is the record's owner's: the owner ref the authority bound
// (for an authenticated caller, its principal's digest, whatever the
// request left empty), never the request's.
func (s *ConceptReservationService) Transition(ctx context.Context, req TransitionRequest) (*TransitionResult, error) {
	res, err := s.auth.Transition(ctx, req)
	if err != nil {
		return nil, err
	}
	if wasMaterialized(res.Record) {
		if err := s.Project(res.Record.OwnerRef, res.Record); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Sync projects the claim's current native record into its owner's
// fragment and regenerates the view, when the claim has a projection to
// keep: the repair for a transition made without this service (through
// the API or `arbiter concept transition` without --repo), which
// ReconcileProjection reports as a state mismatch. It changes nothing
// native; running it again changes nothing more.
func (s *ConceptReservationService) Sync(ctx context.Context, conceptID, tenantRef string) (*Record, error) {
	rec, err := s.auth.Get(ctx, conceptID, tenantRef)
	if err != nil {
		return nil, err
	}
	if !wasMaterialized(rec) {
		return nil, errs.Errorf(errs.CodeConflict, "%s was never materialized: it has no projection to sync", rec.ConceptID)
	}
	if err := s.Project(rec.OwnerRef, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// Project appends rec to owner's fragment unless that exact line is there,
// then regenerates the view.
func (s *ConceptReservationService) Project(owner string, rec *Record) error {
	line := projected(rec)
	path := s.fragmentPath(owner)
	have, err := readFragment(path)
	if err != nil {
		return err
	}
	for _, h := range have {
		if h == line {
			return s.RegenerateView()
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("authority: projection: %w", err)
	}
	body, err := json.Marshal(line)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("authority: projection: %w", err)
	}
	_, werr := f.Write(append(body, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("authority: projection: %w", err)
	}
	return s.RegenerateView()
}

func (s *ConceptReservationService) fragmentsDir() string {
	return filepath.Join(s.repo, "concepts", "fragments")
}

func (s *ConceptReservationService) viewPath() string {
	return filepath.Join(s.repo, "concepts", "view.json")
}

// fragmentPath names the owner's own fragment by a digest of the owner
// ref, so no ref appears in the tree.
func (s *ConceptReservationService) fragmentPath(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return filepath.Join(s.fragmentsDir(), hex.EncodeToString(sum[:8])+".jsonl")
}

// readFragment reads one fragment file (missing: empty), bounded.
func readFragment(path string) ([]ProjectedRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("authority: projection: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxFragmentBytes {
		return nil, errs.Errorf(errs.CodeTooLarge, "fragment %s is %d bytes, more than %d", path, st.Size(), maxFragmentBytes)
	}
	var out []ProjectedRecord
	sc := bufio.NewScanner(io.LimitReader(f, maxFragmentBytes))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r ProjectedRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, errs.Errorf(errs.CodeInvalid, "fragment %s line %d: %v", path, n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("authority: projection %s: %w", path, err)
	}
	return out, nil
}

// readFragments reads every fragment of the repository, bounded.
func (s *ConceptReservationService) readFragments() ([]ProjectedRecord, error) {
	entries, err := os.ReadDir(s.fragmentsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("authority: projection: %w", err)
	}
	if len(entries) > maxFragmentFiles {
		return nil, errs.Errorf(errs.CodeTooLarge, "%d fragment files, more than %d", len(entries), maxFragmentFiles)
	}
	var all []ProjectedRecord
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		recs, err := readFragment(filepath.Join(s.fragmentsDir(), e.Name()))
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}

// merge keeps, per concept id, the record with the highest fence (ties by
// reservation id, so the result never depends on file order), sorted by
// concept id.
func merge(recs []ProjectedRecord) []ProjectedRecord {
	best := map[string]ProjectedRecord{}
	for _, r := range recs {
		b, ok := best[r.ConceptID]
		if !ok || r.Fence > b.Fence || (r.Fence == b.Fence && r.ReservationID > b.ReservationID) {
			best[r.ConceptID] = r
		}
	}
	out := make([]ProjectedRecord, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ConceptID < out[j].ConceptID })
	return out
}

// RegenerateView rewrites view.json from all fragments: a unique temp
// file, fsync, rename over the old view, fsync of the directory. Readers
// see the old view or the new one, never a torn one.
func (s *ConceptReservationService) RegenerateView() error {
	recs, err := s.readFragments()
	if err != nil {
		return err
	}
	body, err := json.MarshalIndent(struct {
		Records []ProjectedRecord `json:"records"`
	}{Records: merge(recs)}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.viewPath(), append(body, '\n'))
}

func writeFileAtomic(path string, body []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("authority: projection: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".view-*.tmp")
	if err != nil {
		return fmt.Errorf("authority: projection: %w", err)
	}
	_, werr := tmp.Write(body)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("authority: projection: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("authority: projection: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("authority: projection: %w", err)
	}
	defer d.Close()
	return d.Sync()
}

// readView reads view.json (missing: empty).
func (s *ConceptReservationService) readView() ([]ProjectedRecord, error) {
	if st, err := os.Stat(s.viewPath()); err == nil && st.Size() > maxFragmentBytes {
		return nil, errs.Errorf(errs.CodeTooLarge, "view is %d bytes, more than %d", st.Size(), maxFragmentBytes)
	}
	raw, err := os.ReadFile(s.viewPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("authority: projection: %w", err)
	}
	var v struct {
		Records []ProjectedRecord `json:"records"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "view.json: %v", err)
	}
	return v.Records, nil
}
